package apierr_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// TestBody holds the wire shape every error answer has: the field is left
// out when no input is to blame.
func TestBody(t *testing.T) {
	t.Parallel()
	for name, tt := range map[string]struct {
		err  *apierr.Error
		want string
	}{
		"WithField":    {apierr.Invalid("schedule", "is required"), `{"error":{"code":"invalid","message":"is required","field":"schedule"}}`},
		"WithoutField": {apierr.New(http.StatusForbidden, apierr.CodeForbidden, "", "no"), `{"error":{"code":"forbidden","message":"no"}}`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw, err := json.Marshal(apierr.Body{Error: tt.err.Detail})
			require.NoError(t, err)
			require.JSONEq(t, tt.want, string(raw))
		})
	}
}

// TestError keeps its status and detail through wrapping, so a handler may
// add context and still answer as the error says.
func TestError(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("check: %w", apierr.Invalid("name", "is too long"))
	var ae *apierr.Error
	require.True(t, errors.As(err, &ae))
	require.Equal(t, http.StatusBadRequest, ae.Status)
	require.Equal(t, apierr.Detail{Code: apierr.CodeInvalid, Message: "is too long", Field: "name"}, ae.Detail)
	require.Equal(t, "invalid: is too long", ae.Error())
}

// TestDependency passes the domain's sentinels through, to be answered as
// 4xx, and marks any other failure of the store or the queue as one of a
// backing service, keeping it for the log.
func TestDependency(t *testing.T) {
	t.Parallel()
	require.NoError(t, apierr.Dependency(nil))
	for _, sentinel := range []error{job.ErrNotFound, job.ErrConflict, job.ErrInvalid} {
		wrapped := fmt.Errorf("get job: %w", sentinel)
		require.Same(t, wrapped, apierr.Dependency(wrapped))
	}
	cause := errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
	var de *apierr.DependencyError
	require.True(t, errors.As(apierr.Dependency(cause), &de))
	require.ErrorIs(t, de, cause)
}
