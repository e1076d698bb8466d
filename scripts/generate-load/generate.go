package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/sync/errgroup"
	"golang.org/x/term"

	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/outbound"
	"github.com/tockhq/tock/pkg/store"
)

// sink creates one batch of jobs, all or none.
type sink interface {
	create(ctx context.Context, items []Item) error
}

// copyLimits are the limits copy mode validates with: the API's defaults,
// with private targets allowed as `make run` allows them (the default -url is
// on loopback).
var copyLimits = jobspec.Limits{
	MaxPayloadBytes: jobspec.DefaultLimits.MaxPayloadBytes,
	Targets:         outbound.Options{AllowPrivate: true},
}

// generate plans the jobs, creates them (unless it is a dry run) and prints
// the summary, also after a failure, of what was created.
func generate(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	seed := cfg.seed
	for seed == 0 {
		seed = rand.Uint64()
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	now := time.Now()
	start, err := ParseStart(cfg.startText, now)
	if err != nil {
		return err
	}
	counts, err := cfg.profile.PerMinute(rng)
	if err != nil {
		return err
	}
	gen, err := NewGenerator(cfg.mix, start, counts, rng)
	if err != nil {
		return err
	}
	if cfg.dryRun {
		tally := NewTally(len(counts))
		for items := gen.Next(cfg.batch); len(items) > 0; items = gen.Next(cfg.batch) {
			tally.Add(items)
		}
		PrintPlan(stdout, start, counts)
		fmt.Fprintln(stdout)
		tally.Print(stdout, Report{Verb: "planned", Name: cfg.mix.Name, Seed: seed, Start: start})
		return nil
	}
	if cfg.mix.Recurring < 1 && start.Before(now) {
		return fmt.Errorf("start %s is in the past: one-off jobs must run in the future", start.Format(time.RFC3339))
	}

	var dst sink
	switch cfg.mode {
	case ModeAPI:
		dst = newAPISink(cfg.api, cfg.token)
	case ModeCopy:
		st, err := store.Open(ctx, cfg.database, int32(cfg.concurrency+1))
		if err != nil {
			return err
		}
		defer st.Close()
		if err := st.Migrate(ctx); err != nil {
			return err
		}
		dst = &copySink{store: st, limits: copyLimits, now: time.Now}
	}

	total := 0
	for _, n := range counts {
		total += n
	}
	bar := newProgress(total, cfg.quiet, stderr)
	tally := NewTally(len(counts))
	began := time.Now()
	err = pump(ctx, gen, cfg.batch, cfg.concurrency, dst, func(items []Item) {
		tally.Add(items)
		bar.Add(len(items))
	})
	elapsed := time.Since(began)
	bar.Finish()
	tally.Print(stdout, Report{Verb: "created", Name: cfg.mix.Name, Mode: cfg.mode, Seed: seed, Start: start, Elapsed: elapsed})
	if err != nil {
		return fmt.Errorf("stopped after %d of %d jobs: %w", tally.Total(), total, err)
	}
	return nil
}

// pump feeds the generator's batches, in order, to concurrency workers that
// hand them to dst, and reports each created batch to done. The first error
// stops everything.
func pump(ctx context.Context, gen *Generator, batch, concurrency int, dst sink, done func([]Item)) error {
	g, ctx := errgroup.WithContext(ctx)
	batches := make(chan []Item, concurrency)
	g.Go(func() error {
		defer close(batches)
		for items := gen.Next(batch); len(items) > 0; items = gen.Next(batch) {
			select {
			case batches <- items:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	for range concurrency {
		g.Go(func() error {
			for items := range batches {
				if err := dst.create(ctx, items); err != nil {
					return err
				}
				done(items)
			}
			return nil
		})
	}
	return g.Wait()
}

// progress is the progress bar, or nothing.
type progress interface {
	Add(n int)
	Finish()
}

type noProgress struct{}

func (noProgress) Add(int) {}
func (noProgress) Finish() {}

type bar struct{ *progressbar.ProgressBar }

func (b bar) Add(n int) { _ = b.ProgressBar.Add(n) }
func (b bar) Finish()   { _ = b.ProgressBar.Finish(); _ = b.ProgressBar.Exit() }

// newProgress returns a progress bar on w when w is a terminal and not quiet.
func newProgress(total int, quiet bool, w io.Writer) progress {
	f, ok := w.(*os.File)
	if quiet || !ok || !term.IsTerminal(int(f.Fd())) {
		return noProgress{}
	}
	return bar{progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("creating jobs"),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("jobs"),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
	)}
}
