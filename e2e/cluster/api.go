package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// API is a small client of the dashboard's JSON API.
type API struct {
	Base  string
	Token string
	HTTP  *http.Client
}

// API returns a client for the cluster's dashboard as the admin.
func (c *Cluster) API() *API {
	return &API{Base: c.APIURL, Token: c.Token, HTTP: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
}

// Do sends a JSON request and decodes a JSON answer into out (if not nil). It
// returns the status code; a transport error is an error.
func (a *API) Do(ctx context.Context, method, path string, body, out any) (int, error) {
	return a.DoWith(ctx, method, path, nil, body, out)
}

// DoWith is Do with more request headers, such as an Idempotency-Key.
func (a *API) DoWith(ctx context.Context, method, path string, h http.Header, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.Base+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+a.Token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := a.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decode %s %s (%d): %w: %s", method, path, resp.StatusCode, err, b)
		}
	}
	return resp.StatusCode, nil
}

// Job is the API's job, as far as the tests read it.
type Job struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Type      string          `json:"type"`
	Status    string          `json:"status"`
	Payload   json.RawMessage `json:"payload"`
	Priority  int             `json:"priority"`
	RunAt     *time.Time      `json:"run_at"`
	NextRunAt *time.Time      `json:"next_run_at"`
}

// Run is the API's run.
type Run struct {
	ID           string     `json:"id"`
	JobID        string     `json:"job_id"`
	ScheduledFor time.Time  `json:"scheduled_for"`
	Attempt      int        `json:"attempt"`
	Status       string     `json:"status"`
	StartedAt    time.Time  `json:"started_at"`
	FinishedAt   *time.Time `json:"finished_at"`
	Output       string     `json:"output"`
	Error        string     `json:"error"`
	LatenessMS   int64      `json:"lateness_ms"`
	ThrottledMS  int64      `json:"throttled_ms"`
}
