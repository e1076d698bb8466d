package tock

// The wire types, every request and answer body, are generated into
// types_gen.go from openapi.json, the document the dashboard serves (which
// `go generate ./services/dashboard/api/` copies here); internal/gen's doc
// says how schemas become Go types. `make generate` refreshes both.
//
//go:generate go run ./internal/gen -in openapi.json -out types_gen.go
