package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// profile takes a CPU profile of every service for d, starting at, into
// -profile's directory as <phase>-<process>.pprof, and returns at once; wait
// blocks until every profile is written. Without -profile it does nothing.
func (b *bench) profile(ctx context.Context, phase string, at time.Time, d time.Duration) (wait func()) {
	if b.cfg.profileDir == "" {
		return func() {}
	}
	if err := os.MkdirAll(b.cfg.profileDir, 0o755); err != nil {
		logf("profile: %v", err)
		return func() {}
	}
	secs := max(int(d.Round(time.Second).Seconds()), 1)
	var wg sync.WaitGroup
	for _, name := range b.c.Names() {
		p := b.c.Proc(name)
		path := filepath.Join(b.cfg.profileDir, phase+"-"+name+".pprof")
		wg.Go(func() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(at)):
			}
			url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", p.MetricsAddr, secs)
			if err := fetchTo(ctx, url, path); err != nil {
				logf("profile %s: %v", name, err)
				return
			}
			logf("profile: %s (%d s)", path, secs)
		})
	}
	return wg.Wait
}

func fetchTo(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d", url, resp.StatusCode)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
