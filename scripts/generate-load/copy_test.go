package main

import (
	"bytes"
	"io"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/testenv"
)

// TestCopyModeInsertsThePlannedJobs runs the command in copy mode against a
// fresh schema, which it migrates, and counts what Postgres holds.
func TestCopyModeInsertsThePlannedJobs(t *testing.T) {
	t.Parallel()
	url := testenv.SchemaURL(t)
	var out bytes.Buffer
	args := []string{"-mode", "copy", "-database", url, "-n", "2000", "-minutes", "3",
		"-recurring", "0.1", "-types", "webhook,ping", "-priorities", "-5,5",
		"-batch", "300", "-concurrency", "3", "-seed", "7", "-quiet"}
	getenv := func(string) string { return "" }
	require.NoError(t, run(t.Context(), args, getenv, &out, io.Discard))
	require.Contains(t, out.String(), "created 2,000 jobs (copy mode)")
	require.Contains(t, out.String(), "one-off 1,800, recurring 200")

	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(t.Context()) })
	var total, recurring, admin, named, audited int
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*), count(schedule), count(*) FILTER (WHERE owner_id = $1),
		count(*) FILTER (WHERE name LIKE 'load-%'), (SELECT count(*) FROM audit_log) FROM jobs`, store.BootstrapAdmin).
		Scan(&total, &recurring, &admin, &named, &audited))
	require.Equal(t, 2000, total)
	require.Equal(t, 200, recurring)
	require.Equal(t, 2000, admin)
	require.Equal(t, 2000, named)
	require.Zero(t, audited, "load is not audited")
}
