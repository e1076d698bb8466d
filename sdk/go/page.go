package tock

import (
	"context"
	"iter"
	"net/url"
	"sort"
	"strconv"
	"time"
)

// all walks every page that fetch returns, from cursor on, yielding each item;
// an error is yielded once, with the zero item, and ends the walk.
func all[T any](ctx context.Context, cursor string, fetch func(ctx context.Context, cursor string) ([]T, string, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			items, next, err := fetch(ctx, cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if next == "" || next == cursor {
				return
			}
			cursor = next
		}
	}
}

// query builds a query string, leaving out empty values.
type query url.Values

func (q query) str(k, v string) {
	if v != "" {
		url.Values(q).Set(k, v)
	}
}

func (q query) int(k string, v int) {
	if v != 0 {
		url.Values(q).Set(k, strconv.Itoa(v))
	}
}

func (q query) time(k string, v time.Time) {
	if !v.IsZero() {
		url.Values(q).Set(k, v.Format(time.RFC3339Nano))
	}
}

// labels adds one label=key=value per entry, in key order.
func (q query) labels(m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		url.Values(q).Add("label", k+"="+m[k])
	}
}
