package job

import (
	"fmt"
	"strconv"
	"strings"
)

// StatusSet is a set of HTTP status codes that count as success.
type StatusSet [][2]int

// ParseStatusSet reads a comma-separated list of codes (200), ranges
// (200-204) and classes (2xx); empty means 2xx.
func ParseStatusSet(s string) (StatusSet, error) {
	if strings.TrimSpace(s) == "" {
		return StatusSet{{200, 299}}, nil
	}
	var set StatusSet
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(strings.ToLower(part))
		var lo, hi int
		var err error
		switch {
		case len(part) == 3 && strings.HasSuffix(part, "xx"):
			var d int
			d, err = strconv.Atoi(part[:1])
			lo, hi = d*100, d*100+99
		case strings.Contains(part, "-"):
			a, b, _ := strings.Cut(part, "-")
			if lo, err = strconv.Atoi(strings.TrimSpace(a)); err == nil {
				hi, err = strconv.Atoi(strings.TrimSpace(b))
			}
		default:
			lo, err = strconv.Atoi(part)
			hi = lo
		}
		if err != nil || lo < 100 || hi > 599 || lo > hi {
			return nil, fmt.Errorf("%q is not a status, range or class such as 200, 200-204 or 2xx", part)
		}
		set = append(set, [2]int{lo, hi})
	}
	return set, nil
}

// Has reports whether code is in the set.
func (s StatusSet) Has(code int) bool {
	for _, r := range s {
		if code >= r[0] && code <= r[1] {
			return true
		}
	}
	return false
}
