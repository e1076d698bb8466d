package access

import (
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/store"
)

// Principal is who a request acts for.
type Principal struct {
	User  uuid.UUID
	Admin bool
	// Limits are the caller's own overrides of the global limits.
	Limits store.Limits
	// Scopes are what the credential may do (the admin token: everything).
	Scopes Scopes
	// expires is when the credential stops (zero: never).
	expires time.Time
	// key is the API key the request authenticated with; uuid.Nil for the
	// admin token. A session opened with a key acts through it.
	key uuid.UUID
}

// Owner is the owner to filter queries by: an administrator sees every
// owner.
func (p Principal) Owner() uuid.UUID {
	if p.Admin {
		return store.AnyOwner
	}
	return p.User
}

// Audit is the audit context of a change the caller makes.
func (p Principal) Audit(action string) store.Audit {
	return store.Audit{Actor: p.User, Action: action}
}

const principalKey = "tock.principal"

// Caller is who the request acts for, as Authenticate found it; the zero
// Principal on a route it does not guard.
func Caller(c *echo.Context) Principal {
	p, _ := c.Get(principalKey).(Principal)
	return p
}

// adminPrincipal is who the admin token acts as.
func adminPrincipal() *Principal {
	return &Principal{User: store.BootstrapAdmin, Admin: true, Scopes: roleScopes(store.RoleAdmin)}
}
