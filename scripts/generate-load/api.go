package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxBatchJobs is the most jobs the bulk API takes in one request.
const MaxBatchJobs = 10_000

// batchPath is the bulk create endpoint.
const batchPath = "/api/v1/jobs:batch"

// maxRetryAfter bounds one wait on a 429, whatever Retry-After says.
const maxRetryAfter = time.Minute

// apiSink creates jobs through POST /api/v1/jobs:batch.
type apiSink struct {
	base   string
	token  string
	client *http.Client
	// sleep waits d or until ctx ends; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
}

func newAPISink(base, token string) *apiSink {
	return &apiSink{
		base:   strings.TrimRight(base, "/"),
		token:  token,
		client: &http.Client{Timeout: 2 * time.Minute},
		sleep:  sleepCtx,
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// batchBody is the request of a bulk create.
type batchBody struct {
	Jobs []Spec `json:"jobs"`
}

// batchCreated is its 201 answer.
type batchCreated struct {
	Created int      `json:"created"`
	IDs     []string `json:"ids"`
}

// batchError is its error answer: the usual error, and for a 400 the error
// of every invalid job.
type batchError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Field   string `json:"field"`
	} `json:"error"`
	Errors []struct {
		Index   int    `json:"index"`
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"errors"`
}

// shownErrors is how many of a 400's job errors an error message quotes.
const shownErrors = 3

// create sends one batch, waiting out every 429 that carries Retry-After.
// Any other failure is returned: a request that may have been applied is
// never sent again, so no job is created twice.
func (a *apiSink) create(ctx context.Context, items []Item) error {
	body := batchBody{Jobs: make([]Spec, len(items))}
	for i, it := range items {
		body.Jobs[i] = it.Spec
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode batch: %w", err)
	}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+batchPath, bytes.NewReader(raw))
		if err != nil {
			return fmt.Errorf("bulk create: %w", err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+a.token)
		resp, err := a.client.Do(req)
		if err != nil {
			return fmt.Errorf("bulk create: %w", err)
		}
		answer, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		_ = resp.Body.Close()
		if err != nil {
			return fmt.Errorf("bulk create: read answer: %w", err)
		}
		switch {
		case resp.StatusCode == http.StatusCreated:
			var out batchCreated
			if err := json.Unmarshal(answer, &out); err != nil {
				return fmt.Errorf("bulk create: decode answer: %w", err)
			}
			if out.Created != len(items) {
				return fmt.Errorf("bulk create: sent %d jobs, %d created", len(items), out.Created)
			}
			return nil
		case resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "":
			secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
			if err != nil || secs < 0 {
				return fmt.Errorf("bulk create: 429 with an unreadable Retry-After %q", resp.Header.Get("Retry-After"))
			}
			if err := a.sleep(ctx, min(time.Duration(secs)*time.Second, maxRetryAfter)); err != nil {
				return err
			}
		default:
			return fmt.Errorf("bulk create: %s", describe(resp.StatusCode, answer))
		}
	}
}

// describe turns an error answer into one line, quoting the first few job
// errors of a 400.
func describe(status int, answer []byte) string {
	var e batchError
	if err := json.Unmarshal(answer, &e); err != nil || e.Error.Message == "" {
		text := strings.TrimSpace(string(answer))
		if len(text) > 200 {
			text = text[:200] + "…"
		}
		return fmt.Sprintf("%d %s: %s", status, http.StatusText(status), text)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", status, e.Error.Message)
	if e.Error.Field != "" && len(e.Errors) == 0 {
		fmt.Fprintf(&b, " (%s)", e.Error.Field)
	}
	for i, it := range e.Errors {
		if i == shownErrors {
			fmt.Fprintf(&b, "; and %d more", len(e.Errors)-shownErrors)
			break
		}
		fmt.Fprintf(&b, "; batch item %d: %s %s", it.Index, it.Field, it.Message)
	}
	return b.String()
}
