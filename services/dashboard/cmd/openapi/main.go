// Command openapi writes the OpenAPI document the dashboard serves
// (api.OpenAPIDocument: openapi.json with what the job types and the job
// fields' one definition fill in) to the file it is given, so that clients
// generate their types from what the API says, not from the source file.
// `go generate ./services/dashboard/api/` runs it to refresh
// sdk/go/openapi.json; services/dashboard/api's tests fail while that copy
// differs from the served document.
//
//	go run ./services/dashboard/cmd/openapi sdk/go/openapi.json
package main

import (
	"fmt"
	"os"

	"github.com/tockhq/tock/services/dashboard/api"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "openapi:", err)
		os.Exit(1)
	}
}

// run writes the served document, with a final newline, to the one path
// in args.
func run(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: openapi <output file>")
	}
	doc, err := api.OpenAPIDocument()
	if err != nil {
		return err
	}
	if err := os.WriteFile(args[0], append(doc, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", args[0], err)
	}
	return nil
}
