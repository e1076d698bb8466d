package check

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// Services are tock's three services, as README's table and the chart's
// values name them.
var Services = []string{"dashboard", "scheduler", "worker"}

// Setting is one environment variable of README's Configuration table and
// the services that read it.
type Setting struct {
	Name     string
	Services []string
}

var (
	// row is a row of the table: its first cell names variables in
	// backquotes, its last says which services use them.
	row = regexp.MustCompile("^\\| (`[A-Z][A-Z0-9_]*`(?:, `[A-Z][A-Z0-9_]*`)*) \\|.*\\| ([^|]+) \\|$")
	// variable is one name in a row's first cell.
	variable = regexp.MustCompile("`([A-Z][A-Z0-9_]*)`")
)

// ReadSettings reads every variable of the Configuration table of the
// README at path. A variable in two rows (TOCK_METRICS_ADDR has one for the
// dashboard and one for the others) is used by the services of both.
func ReadSettings(path string) ([]Setting, error) {
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Setting
	index := map[string]int{}
	for line := range strings.Lines(string(body)) {
		m := row.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		services, err := usedBy(m[2])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m[1], err)
		}
		for _, v := range variable.FindAllStringSubmatch(m[1], -1) {
			name := v[1]
			if i, ok := index[name]; ok {
				out[i].Services = union(out[i].Services, services)
				continue
			}
			index[name] = len(out)
			out = append(out, Setting{Name: name, Services: services})
		}
	}
	return out, nil
}

// usedBy reads a row's last cell: "all" (maybe with a remark after it), or
// service names separated by commas.
func usedBy(cell string) ([]string, error) {
	cell = strings.TrimSpace(cell)
	if cell == "all" || strings.HasPrefix(cell, "all ") {
		return Services, nil
	}
	var out []string
	for _, s := range strings.Split(cell, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(Services, s) {
			return nil, fmt.Errorf("used by %q: not all or a service", cell)
		}
		out = append(out, s)
	}
	return out, nil
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(x, y string) int { return slices.Index(Services, x) - slices.Index(Services, y) })
	return out
}
