package cluster

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// User creates a user (role "user") with the given limits, and a key, as
// the admin, and returns a client of the API that acts as that user, and
// the user's id.
func (a *API) User(ctx context.Context, name string, limits map[string]any) (*API, string, error) {
	body := map[string]any{"name": name, "role": "user"}
	if limits != nil {
		body["limits"] = limits
	}
	var u struct {
		ID string `json:"id"`
	}
	code, err := a.Do(ctx, "POST", "/api/v1/users", body, &u)
	if err != nil {
		return nil, "", err
	}
	if code != 201 {
		return nil, "", fmt.Errorf("create user %s: status %d", name, code)
	}
	var k struct {
		Key string `json:"key"`
	}
	code, err = a.Do(ctx, "POST", "/api/v1/users/"+u.ID+"/keys", map[string]any{"name": "e2e"}, &k)
	if err != nil {
		return nil, "", err
	}
	if code != 201 {
		return nil, "", fmt.Errorf("create key of %s: status %d", name, code)
	}
	return &API{Base: a.Base, Token: k.Key, HTTP: &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}, u.ID, nil
}

// CreateBatch sends POST /api/v1/jobs:batch and wants 201; it returns the
// new jobs' ids.
func (a *API) CreateBatch(ctx context.Context, jobs []any) ([]string, error) {
	var out struct {
		IDs []string `json:"ids"`
	}
	code, err := a.Do(ctx, "POST", "/api/v1/jobs:batch", map[string]any{"jobs": jobs}, &out)
	if err != nil {
		return nil, err
	}
	if code != 201 {
		return nil, fmt.Errorf("create batch of %d: status %d", len(jobs), code)
	}
	return out.IDs, nil
}
