package api

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/jobtype"
)

// The Go SDK generates its types from the served document; its copy,
// sdk/go/openapi.json, is refreshed by `make generate` (openapi_test.go fails
// while it differs).
//
//go:generate go run ../cmd/openapi ../../../sdk/go/openapi.json

// openapiSource is the OpenAPI 3 description of this API, written by hand
// except for what the job types give: openapi_test.go keeps it true (every
// route must be in it, and every response the API's tests provoke must
// match it).
//
//go:embed openapi.json
var openapiSource []byte

// openapiJSON is the document served: the source with the job types filled
// in from package jobtype (OpenAPIDocument).
var openapiJSON = must(OpenAPIDocument())

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// OpenAPIDocument returns the served OpenAPI document: every enum of job
// types lists the registered types, and a type without a payload schema of
// its own (named <Type>Payload, as WebhookPayload) gets one from its
// summary and example, so a new job type appears without editing the file.
func OpenAPIDocument() ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(openapiSource, &doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	names := jobtype.Names()
	enum := make([]any, len(names))
	for i, n := range names {
		enum[i] = n
	}
	var fill func(v any)
	fill = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["x-tock-job-types"] == true {
				v["enum"] = enum
			}
			for _, c := range v {
				fill(c)
			}
		case []any:
			for _, c := range v {
				fill(c)
			}
		}
	}
	fill(doc)
	comps, _ := doc["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	if schemas == nil {
		return nil, fmt.Errorf("openapi.json: no components.schemas")
	}
	// A job's fields come from jobspec.Fields, their one definition; the
	// document keeps each schema's description and its own properties
	// (JobSpec's owner).
	for _, js := range []struct {
		name string
		mode jobspec.Mode
		view bool
	}{{"JobSpec", jobspec.Create, false}, {"JobPatch", jobspec.Patch, false}, {"Job", jobspec.Create, true}} {
		sc, _ := schemas[js.name].(map[string]any)
		if sc == nil {
			return nil, fmt.Errorf("openapi.json: no schema %s", js.name)
		}
		props, required, err := jobspec.Schema(js.mode, js.view)
		if err != nil {
			return nil, err
		}
		fill(props)
		own, _ := sc["properties"].(map[string]any)
		for k, v := range own {
			props[k] = v
		}
		sc["properties"] = props
		if ownReq, ok := sc["required"].([]any); ok {
			for _, r := range ownReq {
				if name, ok := r.(string); ok && !slices.Contains(required, name) {
					required = append(required, name)
				}
			}
		}
		if len(required) > 0 {
			sc["required"] = required
		} else {
			delete(sc, "required")
		}
	}
	var anyOfs [][]any
	var payloads []map[string]any
	for _, name := range []string{"JobSpec", "JobPatch"} {
		sc, _ := schemas[name].(map[string]any)
		props, _ := sc["properties"].(map[string]any)
		payload, _ := props["payload"].(map[string]any)
		anyOf, _ := payload["anyOf"].([]any)
		if anyOf == nil {
			return nil, fmt.Errorf("openapi.json: no %s payload anyOf", name)
		}
		anyOfs, payloads = append(anyOfs, anyOf), append(payloads, payload)
	}
	var added []any
	for _, k := range jobtype.All() {
		name := schemaName(string(k.Type)) + "Payload"
		if _, ok := schemas[name]; ok {
			continue
		}
		schemas[name] = map[string]any{
			"type":        "object",
			"description": "The payload of a " + string(k.Type) + " job: it " + k.Summary + ".",
			"example":     k.Example,
		}
		added = append(added, map[string]any{"$ref": "#/components/schemas/" + name})
	}
	for i, p := range payloads {
		p["anyOf"] = append(anyOfs[i], added...)
	}
	return json.MarshalIndent(doc, "", "  ")
}

// schemaName is a type's name as a schema's: webhook → Webhook, and the
// acronyms in capitals (nats → NATS).
func schemaName(t string) string {
	if n, ok := map[string]string{"nats": "NATS", "amqp": "AMQP", "sqs": "SQS"}[t]; ok {
		return n
	}
	return strings.ToUpper(t[:1]) + t[1:]
}

// openapiDoc serves the OpenAPI document. It needs no token, so that client
// generators and API explorers can fetch it, and it may be cached briefly:
// it changes only with a new release.
func (s *Server) openapiDoc(c *echo.Context) error {
	c.Response().Header().Set("Cache-Control", "public, max-age=300")
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, openapiJSON)
}

// jobTypeView is one job type as GET /api/v1/job-types lists it.
type jobTypeView struct {
	Type    string `json:"type"`
	Summary string `json:"summary"`
	Example any    `json:"example"`
}

// jobTypes lists the job types, with a summary and an example payload each,
// for forms and clients. Like the OpenAPI document it needs no token.
func (s *Server) jobTypes(c *echo.Context) error {
	kinds := jobtype.All()
	out := make([]jobTypeView, len(kinds))
	for i, k := range kinds {
		out[i] = jobTypeView{Type: string(k.Type), Summary: k.Summary, Example: k.Example}
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=300")
	return c.JSON(http.StatusOK, map[string]any{"job_types": out})
}
