package api_test

import (
	"fmt"
	"net/http"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

func labelled(name string, at time.Time, labels map[string]string) map[string]any {
	s := spec(name, at)
	s["labels"] = labels
	return s
}

// names lists the jobs a filtered listing returns, following every page.
func (b *bundle) names(t *testing.T, p *person, query string) []string {
	t.Helper()
	var out []string
	cursor := ""
	for {
		path := "/api/v1/jobs?limit=2&" + query
		if cursor != "" {
			path += "&cursor=" + neturl.QueryEscape(cursor)
		}
		var rec = b.do(t, http.MethodGet, path, nil)
		if p != nil {
			rec = b.as(t, *p, http.MethodGet, path, nil)
		}
		require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
		list := decode[api.JobList](t, rec)
		for _, j := range list.Jobs {
			out = append(out, j.Name)
		}
		if list.NextCursor == "" {
			return out
		}
		cursor = list.NextCursor
	}
}

func TestLabels(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.user(t, "ann", "user", nil)
	at := b.now.Add(time.Hour)
	create := func(p person, body map[string]any) api.Job {
		t.Helper()
		rec := b.as(t, p, http.MethodPost, "/api/v1/jobs", body)
		require.Equal(t, http.StatusCreated, rec.Code, "body: %s", rec.Body.String())
		return decode[api.Job](t, rec)
	}
	first := create(ann, labelled("c1 pro 1", at, map[string]string{"customer": "1234", "plan": "pro"}))
	require.Equal(t, map[string]string{"customer": "1234", "plan": "pro"}, first.Labels)
	create(ann, labelled("c1 free", at, map[string]string{"customer": "1234", "plan": "free"}))
	create(ann, labelled("c2 pro", at, map[string]string{"customer": "5678", "plan": "pro"}))
	create(ann, spec("unlabelled", at))
	rec := b.as(t, ann, http.MethodPost, "/api/v1/jobs:batch", map[string]any{"jobs": []any{
		labelled("c1 pro 2", at, map[string]string{"customer": "1234", "plan": "pro"}),
		labelled("c1 pro 3", at, map[string]string{"customer": "1234", "plan": "pro", "region": "eu"}),
	}})
	require.Equal(t, http.StatusCreated, rec.Code, "body: %s", rec.Body.String())
	// Another user's job with the same labels is never in ann's results.
	bob := b.user(t, "bob", "user", nil)
	create(bob, labelled("bob's", at, map[string]string{"customer": "1234", "plan": "pro"}))

	require.Equal(t, []string{"c1 pro 3", "c1 pro 2", "c1 free", "c1 pro 1"}, b.names(t, &ann, "label=customer=1234"), "newest first, across pages")
	require.Equal(t, []string{"c1 pro 3", "c1 pro 2", "c1 pro 1"}, b.names(t, &ann, "label=customer=1234&label=plan=pro"))
	require.Equal(t, []string{"c1 pro 3"}, b.names(t, &ann, "label=customer=1234&label=plan=pro&label=region=eu"))
	require.Empty(t, b.names(t, &ann, "label=customer=9999"))
	require.Equal(t, []string{"c2 pro"}, b.names(t, &ann, "label=plan=pro&q=c2"), "with the other filters")
	require.Equal(t, []string{"bob's", "c1 pro 3", "c1 pro 2", "c1 pro 1"}, b.names(t, nil, "label=customer=1234&label=plan=pro"), "an administrator sees every owner's")
	require.Equal(t, []string{"bob's"}, b.names(t, nil, "label=customer=1234&owner="+bob.id.String()))

	// PATCH replaces the labels as a whole; {} removes them.
	rec = b.as(t, ann, http.MethodPatch, "/api/v1/jobs/"+first.ID.String(), map[string]any{"labels": map[string]string{"customer": "5678", "plan": "pro"}})
	require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
	require.Equal(t, []string{"c1 pro 3", "c1 pro 2"}, b.names(t, &ann, "label=customer=1234&label=plan=pro"))
	require.Equal(t, []string{"c2 pro", "c1 pro 1"}, b.names(t, &ann, "label=customer=5678"))
	rec = b.as(t, ann, http.MethodPatch, "/api/v1/jobs/"+first.ID.String(), map[string]any{"labels": map[string]string{}})
	require.Equal(t, http.StatusOK, rec.Code)
	require.Empty(t, decode[api.Job](t, rec).Labels)
	require.Equal(t, []string{"c2 pro"}, b.names(t, &ann, "label=customer=5678"))
	rec = b.as(t, ann, http.MethodPatch, "/api/v1/jobs/"+first.ID.String(), map[string]any{"name": "renamed"})
	require.Empty(t, decode[api.Job](t, rec).Labels, "a patch without labels keeps them as they are")

	// Bad labels and bad filters are 400 on their field, and change nothing.
	many := map[string]string{}
	for i := range 21 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	for field, labels := range map[string]map[string]string{
		"labels":          many,
		"labels ":         {"Customer": "1"},
		"labels.customer": {"customer": strings.Repeat("é", 201)},
		"labels.note":     {"note": "a\nb"},
	} {
		e := requireError(t, b.as(t, ann, http.MethodPost, "/api/v1/jobs", labelled("bad", at, labels)), http.StatusBadRequest, apierr.CodeInvalid)
		require.Equal(t, strings.TrimSpace(field), e.Field)
	}
	for _, q := range []string{"label=customer", "label=Customer=1", "label==1", "label=k=" + strings.Repeat("x", 201)} {
		e := requireError(t, b.as(t, ann, http.MethodGet, "/api/v1/jobs?"+q, nil), http.StatusBadRequest, apierr.CodeInvalid)
		require.Equal(t, "label", e.Field, q)
	}
	require.Len(t, b.names(t, &ann, ""), 6)
}
