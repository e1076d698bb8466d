package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/testenv"
)

// TestBrokenConn: the errors of a pooled connection whose server session
// ended are told apart from a dial that failed and from a statement's error,
// on the real Postgres: a session terminated under a connection, then used.
func TestBrokenConn(t *testing.T) {
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, testenv.DatabaseURL())
	require.NoError(t, err)
	defer conn.Close(context.Background())
	admin, err := pgx.Connect(ctx, testenv.DatabaseURL())
	require.NoError(t, err)
	defer admin.Close(context.Background())

	var pid int
	require.NoError(t, conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid))
	_, err = admin.Exec(ctx, "SELECT pg_terminate_backend($1)", pid)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "SELECT 1")
	require.Error(t, err)
	require.True(t, brokenConn(fmt.Errorf("fetch attempts: %w", err)), "a terminated session: %v", err)

	_, err = admin.Exec(ctx, "SELECT 1/0")
	require.False(t, brokenConn(err), "a statement's error: %v", err)
	_, err = pgx.Connect(ctx, "postgres://postgres@127.0.0.1:1/none?connect_timeout=1")
	require.False(t, brokenConn(err), "a failed dial: %v", err)

	require.True(t, brokenConn(fmt.Errorf("finish runs: %w", io.ErrUnexpectedEOF)))
	require.True(t, brokenConn(fmt.Errorf("x: %w", syscall.ECONNRESET)))
	require.False(t, brokenConn(errors.New("unexpected EOF")), "text alone is not enough")
	require.False(t, brokenConn(&pgconn.PgError{Code: "40001"}))
}
