package api_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/labstack/echo/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/outbound"
	"github.com/tockhq/tock/services/dashboard/api"
)

// openapiFile is the document the API embeds and serves.
const openapiFile = "openapi.json"

// openapi is the loaded document and a router over its operations.
type openapi struct {
	doc    *openapi3.T
	router routers.Router
}

// loadOpenAPI loads openapi.json once for the whole test binary: every
// setup wraps its handler in validated, and the document never changes.
var loadOpenAPI = sync.OnceValues(func() (*openapi, error) {
	served, err := api.OpenAPIDocument()
	if err != nil {
		return nil, err
	}
	doc, err := openapi3.NewLoader().LoadFromData(served)
	if err != nil {
		return nil, err
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	return &openapi{doc: doc, router: router}, nil
})

// uuidShape is how the API writes a UUID: lower-case hex in 8-4-4-4-12. It
// does not check the version: the bootstrap administrator's id is
// 00000000-0000-0000-0000-000000000001.
const uuidShape = `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`

// validationOptions validate responses strictly: a status the operation does
// not list fails, and a uuid must look like one (kin-openapi leaves the uuid
// format unchecked unless asked). Reports name the offending JSON path and
// leave out the schema, which the document shows better.
var validationOptions = &openapi3filter.Options{
	IncludeResponseStatus: true,
	MultiError:            true,
	SkipSettingDefaults:   true,
	AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
	SchemaValidationOptions: []openapi3.SchemaValidationOption{
		openapi3.DisableSchemaErrorDetails(),
		openapi3.WithStringFormatValidator("uuid", openapi3.NewRegexpFormatValidator(uuidShape)),
	},
}

// validated wraps h so that every exchange through it is checked against
// openapi.json, failing t with the method, path, status and the mismatch:
//
//   - the response must be one the operation documents, status, headers and
//     body (unknown fields included, as the document closes its objects);
//   - a request the API accepted (2xx) must be one the document allows, so
//     the document asks for no less than the API does. Requests the API
//     refused are not checked: tests send malformed ones on purpose;
//   - a path the document does not know, under /api/v1 or a probe, must be
//     a 404 or 405 in the error shape.
//
// Paths outside the API (the browser dashboard at /) are passed through.
func validated(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	spec, err := loadOpenAPI()
	require.NoError(t, err)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The body is kept to validate the request after the API has read it.
		var reqBody []byte
		if r.Body != nil && r.Body != http.NoBody {
			var err error
			if reqBody, err = io.ReadAll(r.Body); err != nil {
				t.Errorf("%s %s: read the request body: %v", r.Method, r.URL.RequestURI(), err)
			}
			r.Body = io.NopCloser(bytes.NewReader(reqBody))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if err := spec.check(r, reqBody, rec); err != nil {
			t.Errorf("%s %s answered %d, which openapi.json does not allow: %v\nresponse body: %s",
				r.Method, r.URL.RequestURI(), rec.Code, err, rec.Body.String())
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// documented reports whether the document covers path: the API and the probes.
func documented(path string) bool {
	return strings.HasPrefix(path, "/api/v1/") || path == "/healthz" || path == "/readyz"
}

// check validates one exchange; see validated.
func (o *openapi) check(r *http.Request, reqBody []byte, rec *httptest.ResponseRecorder) error {
	if !documented(r.URL.Path) || r.Method == http.MethodHead {
		return nil
	}
	route, params, err := o.router.FindRoute(r)
	if err != nil {
		return o.checkUnrouted(err, rec)
	}
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: validationOptions}
	if rec.Code >= 200 && rec.Code < 300 {
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
		if err := openapi3filter.ValidateRequest(r.Context(), in); err != nil {
			return errors.New("the request was accepted but does not match the document: " + err.Error())
		}
	}
	resp := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 rec.Code,
		Header:                 rec.Header(),
		Options:                validationOptions,
	}
	resp.SetBodyBytes(rec.Body.Bytes())
	if err := openapi3filter.ValidateResponse(r.Context(), resp); err != nil {
		return err
	}
	// kin-openapi skips the body of a response documented without content;
	// such a response must have none.
	if ref := route.Operation.Responses.Status(rec.Code); ref != nil && len(ref.Value.Content) == 0 && rec.Body.Len() > 0 {
		return errors.New("the response is documented without a body but has one")
	}
	return nil
}

// checkUnrouted validates the answer to a request no operation matches: a
// 404 for an unknown path, a 405 for a known path with another method, both
// in the error shape.
func (o *openapi) checkUnrouted(routeErr error, rec *httptest.ResponseRecorder) error {
	var name string
	switch {
	case errors.Is(routeErr, routers.ErrPathNotFound) && rec.Code == http.StatusNotFound:
		name = "NotFound"
	case errors.Is(routeErr, routers.ErrMethodNotAllowed) && rec.Code == http.StatusMethodNotAllowed:
		name = "MethodNotAllowed"
	default:
		return errors.New("no operation in the document matches the request: " + routeErr.Error())
	}
	if rec.Body.Len() == 0 {
		return nil // HEAD
	}
	schema := o.doc.Components.Responses[name].Value.Content.Get("application/json").Schema.Value
	var v any
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		return err
	}
	return schema.VisitJSON(v, openapi3.VisitAsResponse(), openapi3.MultiErrors(), openapi3.DisableSchemaErrorDetails())
}

func TestOpenAPI(t *testing.T) {
	t.Parallel()

	t.Run("DocumentIsValid", func(t *testing.T) {
		t.Parallel()
		spec, err := loadOpenAPI()
		require.NoError(t, err)
		require.Equal(t, "3.0.3", spec.doc.OpenAPI)
		require.NoError(t, spec.doc.Validate(t.Context()))
	})

	t.Run("EveryRouteIsDocumentedAndEveryOperationRouted", func(t *testing.T) {
		t.Parallel()
		spec, err := loadOpenAPI()
		require.NoError(t, err)

		e, ok := api.New(api.Deps{Logger: zaptest.NewLogger(t)}).Handler().(*echo.Echo)
		require.True(t, ok, "the handler is echo's")
		var registered []string
		for _, rt := range e.Router().Routes() {
			if documented(rt.Path) {
				registered = append(registered, rt.Method+" "+openAPIPath(rt.Path))
			}
		}
		var operations []string
		for path, item := range spec.doc.Paths.Map() {
			for method := range item.Operations() {
				operations = append(operations, method+" "+path)
			}
		}
		require.Empty(t, without(registered, operations), "routes missing from openapi.json")
		require.Empty(t, without(operations, registered), "operations in openapi.json that no route serves")
	})

	t.Run("EveryOperationDocumentsItsErrors", func(t *testing.T) {
		t.Parallel()
		spec, err := loadOpenAPI()
		require.NoError(t, err)
		for path, item := range spec.doc.Paths.Map() {
			if !strings.HasPrefix(path, "/api/v1/") || path == "/api/v1/openapi.json" || path == "/api/v1/job-types" {
				continue
			}
			for method, op := range item.Operations() {
				want := []int{http.StatusUnauthorized, http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable}
				if strings.Contains(path, "{") {
					want = append(want, http.StatusNotFound)
				}
				if op.RequestBody != nil {
					want = append(want, http.StatusBadRequest, http.StatusRequestEntityTooLarge)
				}
				if len(op.Parameters) > 0 {
					want = append(want, http.StatusBadRequest)
				}
				for _, status := range want {
					require.NotNil(t, op.Responses.Value(strconv.Itoa(status)), "%s %s documents %d", method, path, status)
				}
				require.Nil(t, op.Security, "%s %s needs the bearer token like the rest of /api/v1", method, path)
			}
		}
	})

	t.Run("ServedWithoutToken", func(t *testing.T) {
		t.Parallel()
		h := validated(t, api.New(api.Deps{Logger: zaptest.NewLogger(t)}).Handler())
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/api/v1/openapi.json", nil))
		require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
		require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		require.NotEmpty(t, rec.Header().Get("Cache-Control"))
		want, err := api.OpenAPIDocument()
		require.NoError(t, err)
		require.Equal(t, string(want), rec.Body.String())
		var doc struct {
			Components struct {
				Schemas map[string]struct {
					Properties map[string]struct {
						Enum []string `json:"enum"`
					} `json:"properties"`
				} `json:"schemas"`
			} `json:"components"`
		}
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &doc))
		require.Equal(t, jobtype.Names(), doc.Components.Schemas["JobSpec"].Properties["type"].Enum, "the job types come from package jobtype")
		require.Contains(t, doc.Components.Schemas, "NATSPayload", "a type without a hand-written schema gets one")
	})

	t.Run("SDKCopyIsCurrent", func(t *testing.T) {
		t.Parallel()
		// The Go SDK's types are generated from its copy of the served
		// document (cmd/openapi writes it), so a change to openapi.json or to
		// a job field must be copied there, and the types regenerated.
		want, err := api.OpenAPIDocument()
		require.NoError(t, err)
		got, err := os.ReadFile("../../../sdk/go/openapi.json")
		require.NoError(t, err)
		require.True(t, bytes.Equal(append(want, '\n'), got),
			"sdk/go/openapi.json is not the document the dashboard serves; run `make generate`")
	})

	t.Run("JobTypesListsEveryType", func(t *testing.T) {
		t.Parallel()
		h := validated(t, api.New(api.Deps{Logger: zaptest.NewLogger(t)}).Handler())
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/api/v1/job-types", nil))
		require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
		var got struct {
			JobTypes []struct {
				Type    string          `json:"type"`
				Example json.RawMessage `json:"example"`
			} `json:"job_types"`
		}
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
		var names []string
		for _, k := range got.JobTypes {
			names = append(names, k.Type)
			_, err := jobtype.Validate(job.Type(k.Type), k.Example, 0, outbound.Options{})
			require.NoError(t, err, "the example of %s is a valid payload", k.Type)
		}
		require.Equal(t, jobtype.Names(), names)
	})
}

// TestValidated checks the checker: what validated must let through and
// what it must report.
func TestValidated(t *testing.T) {
	t.Parallel()
	const (
		id      = "0193f8a2-7c1e-7d3a-9b1f-2a4c6e8f0a1b"
		jobPath = "/api/v1/jobs/" + id
	)
	cases := []struct {
		name, method, path, reqBody string
		status                      int
		contentType, respBody       string
		// want is part of the report expected; empty for none.
		want string
	}{
		{"DocumentedResponsePasses", http.MethodGet, "/healthz", "", 200, "application/json", `{"status":"ok"}`, ""},
		{"UndocumentedFieldFails", http.MethodGet, "/healthz", "", 200, "application/json", `{"status":"ok","uptime":3}`, "uptime"},
		{"UndocumentedStatusFails", http.MethodGet, "/healthz", "", 418, "application/json", `{"status":"ok"}`, "status is not supported"},
		{"TimeWithoutMillisecondsFails", http.MethodPost, jobPath + "/trigger", "", 202, "application/json",
			`{"job_id":"` + id + `","scheduled_for":"2026-12-24T08:00:00Z","idempotency_key":"k"}`, "scheduled_for"},
		{"MalformedUUIDFails", http.MethodPost, jobPath + "/trigger", "", 202, "application/json",
			`{"job_id":"` + strings.ToUpper(id) + `","scheduled_for":"2026-12-24T08:00:00.000Z","idempotency_key":"k"}`, "job_id"},
		{"ErrorCodeMustSuitStatus", http.MethodGet, jobPath, "", 404, "application/json", `{"error":{"code":"conflict","message":"m"}}`, "code"},
		{"ErrorWithoutContentTypeFails", http.MethodGet, jobPath, "", 404, "", `{"error":{"code":"not_found","message":"m"}}`, "Content-Type"},
		{"UnknownPathIn404ShapePasses", http.MethodGet, "/api/v1/nothing", "", 404, "application/json", `{"error":{"code":"not_found","message":"m"}}`, ""},
		{"UnknownPathOutOfShapeFails", http.MethodGet, "/api/v1/nothing", "", 404, "application/json", `{"error":"not found"}`, "error"},
		{"UnknownPathAnswered200Fails", http.MethodGet, "/api/v1/nothing", "", 200, "application/json", `{}`, "no operation"},
		{"WrongMethodIn405ShapePasses", http.MethodPut, "/api/v1/jobs", "{}", 405, "application/json", `{"error":{"code":"method_not_allowed","message":"m"}}`, ""},
		{"AcceptedRequestMustMatch", http.MethodPost, "/api/v1/schedules/preview", `{"delay":"1m","nmae":1}`, 200, "application/json", `{"next":[]}`, "request was accepted"},
		{"RefusedRequestIsNotChecked", http.MethodPost, "/api/v1/schedules/preview", `{"delay":"1m","nmae":1}`, 400, "application/json",
			`{"error":{"code":"invalid","message":"is not a known field","field":"nmae"}}`, ""},
		{"NoContentHasNoBody", http.MethodDelete, jobPath, "", 204, "application/json", `{}`, "without a body"},
		{"OutsideTheAPIPassesThrough", http.MethodGet, "/", "", 200, "text/html", `<html></html>`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stub := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				if tc.contentType != "" {
					w.Header().Set("Content-Type", tc.contentType)
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.respBody)
			})
			rt := &reportingT{TB: t}
			var body io.Reader
			if tc.reqBody != "" {
				body = strings.NewReader(tc.reqBody)
			}
			req := httptest.NewRequestWithContext(t.Context(), tc.method, tc.path, body)
			if body != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			rec := httptest.NewRecorder()
			validated(rt, stub).ServeHTTP(rec, req)

			require.Equal(t, tc.status, rec.Code, "passed on as it was")
			require.Equal(t, tc.respBody, rec.Body.String(), "passed on as it was")
			if tc.want == "" {
				require.Empty(t, rt.reports)
				return
			}
			require.Len(t, rt.reports, 1)
			require.Contains(t, rt.reports[0], tc.want)
			require.Contains(t, rt.reports[0], tc.method+" "+tc.path+" answered "+strconv.Itoa(tc.status))
		})
	}
}

// reportingT records what validated reports instead of failing the test.
type reportingT struct {
	testing.TB
	reports []string
}

func (r *reportingT) Errorf(format string, args ...any) {
	r.reports = append(r.reports, fmt.Sprintf(format, args...))
}

// echoParam matches a path parameter in echo's syntax, :id, but not an
// escaped colon such as jobs\:batch.
var echoParam = regexp.MustCompile(`(^|[^\\]):([A-Za-z0-9_]+)`)

// openAPIPath writes an echo route as an OpenAPI path.
func openAPIPath(route string) string {
	return strings.ReplaceAll(echoParam.ReplaceAllString(route, "$1{$2}"), `\:`, ":")
}

// without returns the elements of a that are not in b, sorted.
func without(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}
