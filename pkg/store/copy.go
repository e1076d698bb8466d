package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tockhq/tock/pkg/job"
)

// A bulk create's jobs go into Postgres in one COPY in its binary format,
// each row written straight from the columns' values (jobspec.Column.Value)
// by the encoder of the column's Postgres type. pgx's CopyFrom, which
// boxes a row into a []any, finds an encode plan for every value and asks
// Postgres for the columns' types before every COPY, took a quarter of
// the dashboard's CPU in a bulk create.

// copyJobsSQL copies jobCopyColumns in binary.
var copyJobsSQL = `COPY jobs (` + jobCopyColumnList + `) FROM STDIN (FORMAT binary)`

// copyHeader opens a binary COPY: the signature, no flags, no extension.
var copyHeader = append([]byte("PGCOPY\n\xff\r\n\x00"), 0, 0, 0, 0, 0, 0, 0, 0)

// A columnEncoder appends one value of a column, its length first, or -1
// for NULL.
type columnEncoder func(buf []byte, v any) ([]byte, error)

// jobEncoders are the encoders of allColumns, found once per Store from
// the jobs table's column types.
type jobEncoders struct {
	mu   sync.Mutex
	encs []columnEncoder
}

// get returns the encoders, reading the column types through q the first
// time.
func (e *jobEncoders) get(ctx context.Context, q pgx.Tx) ([]columnEncoder, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.encs != nil {
		return e.encs, nil
	}
	rows, err := q.Query(ctx, `SELECT a.attname, t.typname, t.typtype FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
WHERE a.attrelid = 'jobs'::regclass AND a.attnum > 0 AND NOT a.attisdropped`)
	if err != nil {
		return nil, fmt.Errorf("jobs column types: %w", err)
	}
	types := map[string]string{}
	for rows.Next() {
		var name, typ, kind string
		if err := rows.Scan(&name, &typ, &kind); err != nil {
			return nil, fmt.Errorf("jobs column types: %w", err)
		}
		if kind == "e" {
			typ = "text" // an enum's binary form is its label
		}
		types[name] = typ
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("jobs column types: %w", err)
	}
	encs := make([]columnEncoder, len(allColumns))
	for i, c := range allColumns {
		enc, ok := encoderFor(types[c.Name])
		if !ok {
			return nil, fmt.Errorf("jobs.%s: no binary encoder for type %q", c.Name, types[c.Name])
		}
		encs[i] = enc
	}
	e.encs = encs
	return encs, nil
}

// invalidBinaryRepresentation is the SQLSTATE of a value Postgres cannot
// read in the binary format of its column's type.
const invalidBinaryRepresentation = "22P03"

func (e *jobEncoders) reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.encs = nil
}

func encoderFor(typ string) (columnEncoder, bool) {
	switch typ {
	case "uuid":
		return encodeUUID, true
	case "int2":
		return encodeInt(2), true
	case "int4":
		return encodeInt(4), true
	case "int8":
		return encodeInt(8), true
	case "text", "varchar":
		return encodeText, true
	case "_text":
		return encodeTextArray, true
	case "jsonb":
		return encodeJSONB, true
	case "timestamptz":
		return encodeTimestamptz, true
	case "bool":
		return encodeBool, true
	}
	return nil, false
}

// encodeJobRows is the binary COPY of jobs into allColumns: header,
// rows, trailer.
func encodeJobRows(encs []columnEncoder, jobs []*job.Job) ([]byte, error) {
	buf := make([]byte, 0, len(copyHeader)+len(jobs)*(2+len(encs)*4+160)+2)
	buf = append(buf, copyHeader...)
	var err error
	for _, j := range jobs {
		buf = binary.BigEndian.AppendUint16(buf, uint16(len(encs)))
		for i, enc := range encs {
			if buf, err = enc(buf, allColumns[i].Value(j)); err != nil {
				return nil, fmt.Errorf("job %s, column %s: %w", j.ID, allColumns[i].Name, err)
			}
		}
	}
	return binary.BigEndian.AppendUint16(buf, 0xffff), nil
}

// copyJobs inserts jobs in tx with one binary COPY.
func (s *Store) copyJobs(ctx context.Context, tx pgx.Tx, jobs []*job.Job) error {
	encs, err := s.encoders.get(ctx, tx)
	if err != nil {
		return err
	}
	rows, err := encodeJobRows(encs, jobs)
	if err != nil {
		return err
	}
	_, err = tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(rows), copyJobsSQL)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == invalidBinaryRepresentation {
		// A column's type changed under a running release (a newer
		// one's migration): read the types again for the next COPY.
		s.encoders.reset()
	}
	return err
}

func appendNull(buf []byte) []byte { return binary.BigEndian.AppendUint32(buf, math.MaxUint32) }

func appendBytes(buf []byte, b []byte) []byte {
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(b)))
	return append(buf, b...)
}

// deref returns the value a non-nil pointer points to, and whether v is
// NULL: nil, a nil pointer or a nil slice, as pgx reads them.
func deref(v any) (any, bool) {
	switch x := v.(type) {
	case nil:
		return nil, true
	case *string:
		if x == nil {
			return nil, true
		}
		return *x, false
	case []byte:
		return x, x == nil
	case json.RawMessage:
		return []byte(x), x == nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer:
		if rv.IsNil() {
			return nil, true
		}
		return deref(rv.Elem().Interface())
	case reflect.Slice, reflect.Map:
		if rv.IsNil() {
			return nil, true
		}
	}
	return v, false
}

func encodeUUID(buf []byte, v any) ([]byte, error) {
	v, null := deref(v)
	if null {
		return appendNull(buf), nil
	}
	switch x := v.(type) {
	case uuid.UUID:
		return appendBytes(buf, x[:]), nil
	case [16]byte:
		return appendBytes(buf, x[:]), nil
	}
	return nil, fmt.Errorf("cannot encode %T as uuid", v)
}

// encodeInt returns the encoder of a size-byte integer column, which
// refuses a value out of its range.
func encodeInt(size int) columnEncoder {
	lo, hi := int64(math.MinInt16), int64(math.MaxInt16)
	switch size {
	case 4:
		lo, hi = math.MinInt32, math.MaxInt32
	case 8:
		lo, hi = math.MinInt64, math.MaxInt64
	}
	return func(buf []byte, v any) ([]byte, error) {
		v, null := deref(v)
		if null {
			return appendNull(buf), nil
		}
		n, ok := integer(v)
		if !ok {
			return nil, fmt.Errorf("cannot encode %T as a %d-byte integer", v, size)
		}
		if n < lo || n > hi {
			return nil, fmt.Errorf("%d is out of range for a %d-byte integer", n, size)
		}
		buf = binary.BigEndian.AppendUint32(buf, uint32(size))
		switch size {
		case 2:
			return binary.BigEndian.AppendUint16(buf, uint16(n)), nil
		case 4:
			return binary.BigEndian.AppendUint32(buf, uint32(n)), nil
		}
		return binary.BigEndian.AppendUint64(buf, uint64(n)), nil
	}
}

func integer(v any) (int64, bool) {
	switch x := v.(type) {
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case int:
		return int64(x), true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), true
	case reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return int64(rv.Uint()), true
	case reflect.Uint, reflect.Uint64:
		if u := rv.Uint(); u <= math.MaxInt64 {
			return int64(u), true
		}
	}
	return 0, false
}

func encodeText(buf []byte, v any) ([]byte, error) {
	v, null := deref(v)
	if null {
		return appendNull(buf), nil
	}
	if s, ok := v.(string); ok {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(s)))
		return append(buf, s...), nil
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.String {
		return encodeText(buf, rv.String())
	}
	return nil, fmt.Errorf("cannot encode %T as text", v)
}

// textOID is text's type oid, which a binary text[] names.
const textOID = 25

// encodeTextArray writes a []string as a one-dimensional text[] without
// NULL elements: dimensions, null flag, element type, then each
// dimension's length and lower bound, then each element's length and
// bytes.
func encodeTextArray(buf []byte, v any) ([]byte, error) {
	v, null := deref(v)
	if null {
		return appendNull(buf), nil
	}
	xs, ok := v.([]string)
	if !ok {
		return nil, fmt.Errorf("cannot encode %T as text[]", v)
	}
	size := 20
	for _, x := range xs {
		size += 4 + len(x)
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(size))
	for _, n := range []uint32{1, 0, textOID, uint32(len(xs)), 1} {
		buf = binary.BigEndian.AppendUint32(buf, n)
	}
	for _, x := range xs {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(x)))
		buf = append(buf, x...)
	}
	return buf, nil
}

// encodeJSONB writes JSON text after jsonb's version byte, 1.
func encodeJSONB(buf []byte, v any) ([]byte, error) {
	v, null := deref(v)
	if null {
		return appendNull(buf), nil
	}
	var b []byte
	switch x := v.(type) {
	case []byte:
		b = x
	case string:
		b = []byte(x)
	default:
		return nil, fmt.Errorf("cannot encode %T as jsonb", v)
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(b)+1))
	return append(append(buf, 1), b...), nil
}

// y2k is where Postgres's timestamps count from.
var y2k = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Unix() * 1_000_000

// encodeTimestamptz writes microseconds since 2000-01-01 UTC, finer
// digits dropped, as pgx does.
func encodeTimestamptz(buf []byte, v any) ([]byte, error) {
	v, null := deref(v)
	if null {
		return appendNull(buf), nil
	}
	t, ok := v.(time.Time)
	if !ok {
		return nil, fmt.Errorf("cannot encode %T as timestamptz", v)
	}
	us := t.Unix()*1_000_000 + int64(t.Nanosecond())/1000 - y2k
	buf = binary.BigEndian.AppendUint32(buf, 8)
	return binary.BigEndian.AppendUint64(buf, uint64(us)), nil
}

func encodeBool(buf []byte, v any) ([]byte, error) {
	v, null := deref(v)
	if null {
		return appendNull(buf), nil
	}
	b, ok := v.(bool)
	if !ok {
		return nil, fmt.Errorf("cannot encode %T as bool", v)
	}
	buf = binary.BigEndian.AppendUint32(buf, 1)
	if b {
		return append(buf, 1), nil
	}
	return append(buf, 0), nil
}
