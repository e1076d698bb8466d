package jobtype

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"os"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/outbound"
)

// TypeEmail is a message sent through the operator's SMTP relay.
const TypeEmail job.Type = "email"

// Email is the email job type.
var Email = Kind{
	Type:    TypeEmail,
	Summary: "sends an email through the operator's SMTP relay",
	Example: EmailPayload{To: []string{"someone@example.com"}, Subject: "Hello", Text: "Hello from tock"},
	Check:   func(raw json.RawMessage, _ outbound.Options) error { return checkEmail(raw) },
	New:     func(d Deps) Executor { return NewEmail(d.Email, d.Version) },
	Load: func(_ string, seq int) any {
		return EmailPayload{To: []string{"load@example.com"}, Subject: "generate-load", Text: "job " + strconv.Itoa(seq)}
	},
}

// EmailPayload is the payload of an email job, sent through the operator's
// SMTP relay from the operator's sender address. Addresses are RFC 5322
// addresses such as "ops@example.com" or "Ops <ops@example.com>".
type EmailPayload struct {
	To      []string `json:"to"`
	Cc      []string `json:"cc,omitempty"`
	Bcc     []string `json:"bcc,omitempty"`
	Subject string   `json:"subject"`
	// Text and HTML are the bodies; with both, the message is
	// multipart/alternative.
	Text    string `json:"text,omitempty"`
	HTML    string `json:"html,omitempty"`
	ReplyTo string `json:"reply_to,omitempty"`
}

// Limits of an email payload, checked when a job is created.
const (
	// MaxEmailRecipients bounds to, cc and bcc together.
	MaxEmailRecipients = 50
	// MaxEmailSubjectLen is RFC 5322's line limit, in bytes.
	MaxEmailSubjectLen = 998
)

// checkEmail validates an email payload. It refuses header injection: no CR
// or LF in the subject or in any address, including a display name that
// decodes to one (an RFC 2047 encoded word can hide a line break).
func checkEmail(raw json.RawMessage) error {
	var p EmailPayload
	if err := decodeStrict(raw, &p); err != nil {
		return invalid("payload", "%s", err)
	}
	if len(p.To) == 0 {
		return invalid("payload.to", "needs at least one recipient")
	}
	if n := len(p.To) + len(p.Cc) + len(p.Bcc); n > MaxEmailRecipients {
		return invalid("payload.to", "to, cc and bcc have %d recipients; at most %d are allowed", n, MaxEmailRecipients)
	}
	for _, list := range []struct {
		field string
		addrs []string
	}{{"payload.to", p.To}, {"payload.cc", p.Cc}, {"payload.bcc", p.Bcc}} {
		for i, a := range list.addrs {
			if err := checkAddress(a); err != nil {
				return invalid(list.field, "recipient %d %s", i+1, err)
			}
		}
	}
	if p.ReplyTo != "" {
		if err := checkAddress(p.ReplyTo); err != nil {
			return invalid("payload.reply_to", "%s", err)
		}
	}
	switch {
	case strings.TrimSpace(p.Subject) == "":
		return invalid("payload.subject", "is required")
	case strings.ContainsAny(p.Subject, "\r\n"):
		return invalid("payload.subject", "must not contain a line break")
	case strings.ContainsFunc(p.Subject, func(r rune) bool { return r != '\t' && isControl(r) }):
		return invalid("payload.subject", "must not contain a control character")
	case len(p.Subject) > MaxEmailSubjectLen:
		return invalid("payload.subject", "is longer than %d bytes", MaxEmailSubjectLen)
	}
	if strings.TrimSpace(p.Text) == "" && strings.TrimSpace(p.HTML) == "" {
		return invalid("payload.text", "text or html is required")
	}
	return nil
}

// checkAddress accepts one RFC 5322 address, with or without a display name,
// that carries no control character before or after decoding.
func checkAddress(s string) error {
	if hasControl(s) {
		return fmt.Errorf("must not contain a line break or control character")
	}
	a, err := mail.ParseAddress(s)
	if err != nil {
		return fmt.Errorf("is not an email address such as ops@example.com")
	}
	if hasControl(a.Name) || hasControl(a.Address) {
		return fmt.Errorf("must not contain a line break or control character")
	}
	return nil
}

// StartTLS is how a connection to the SMTP relay without implicit TLS is
// upgraded to TLS.
type StartTLS string

// The STARTTLS policies.
const (
	// StartTLSMandatory refuses to send unless the relay offers STARTTLS and
	// the handshake succeeds: the default, since credentials and messages
	// would otherwise cross the network in clear.
	StartTLSMandatory StartTLS = "mandatory"
	// StartTLSOpportunistic upgrades when the relay offers it and sends in
	// clear otherwise.
	StartTLSOpportunistic StartTLS = "opportunistic"
	// StartTLSNone never upgrades, for a relay on the same host or a test.
	StartTLSNone StartTLS = "none"
)

// EmailConfig is the SMTP relay email jobs are sent through, chosen by the
// operator. The zero value (no Host) leaves email unconfigured: email jobs
// then fail with a clear error rather than the worker refusing to start.
type EmailConfig struct {
	Host string
	// Port defaults to 587, or 465 with TLS.
	Port     int
	Username string
	// Password is never logged nor put in an outcome.
	Password string `json:"-"`
	// From is the sender of every message, such as "tock <tock@example.com>".
	From     string
	StartTLS StartTLS
	// TLS is implicit TLS from the first byte (SMTPS, usually port 465);
	// StartTLS is then moot.
	TLS bool
	// TLSConfig replaces the default TLS settings (verify the relay's
	// certificate for Host against the system roots); tests set it to trust
	// their own certificate.
	TLSConfig *tls.Config `json:"-"`
}

// String describes the relay without its password, so that printing a
// config never leaks it.
func (c EmailConfig) String() string {
	return fmt.Sprintf("smtp relay %s:%d from %q as %q (starttls %s, tls %t)",
		c.Host, c.Port, c.From, c.Username, c.StartTLS, c.TLS)
}

// GoString is String, for %#v.
func (c EmailConfig) GoString() string { return c.String() }

// headerTockIdempotencyKey carries the occurrence's idempotency key in a
// message, beside the X-Tock-Job-Id, X-Tock-Scheduled-For and X-Tock-Attempt
// headers that webhooks get too; the key is also in the Message-ID.
const headerTockIdempotencyKey = "X-Tock-Idempotency-Key"

// smtpAuthPreference is the order in which SMTP AUTH mechanisms are tried
// when the relay offers several. PLAIN and LOGIN send the password itself, so
// the client refuses them on a connection without TLS, except to localhost.
var smtpAuthPreference = []gomail.SMTPAuthType{
	gomail.SMTPAuthSCRAMSHA256, gomail.SMTPAuthSCRAMSHA1,
	gomail.SMTPAuthPlain, gomail.SMTPAuthLogin, gomail.SMTPAuthCramMD5,
}

// Email runs email jobs: it sends one message through the operator's SMTP
// relay. The relay is the operator's, not a user's URL, so no SSRF guard
// applies: the user chooses only the recipients, whom the relay checks.
//
// An occurrence's every attempt carries the same Message-ID and
// X-Tock-Idempotency-Key, so a receiver can tell a duplicate that a retry
// after a lost reply produced.
type emailExecutor struct {
	cfg       EmailConfig
	from      *mail.Address
	fromErr   error
	tlsConfig *tls.Config
	helo      string
	userAgent string
}

// NewEmail returns an email executor sending through the relay cfg describes
// as tock/version. A cfg without Host gives an executor whose every attempt
// fails saying that email is not configured.
func NewEmail(cfg EmailConfig, version string) Executor {
	if cfg.Port == 0 {
		cfg.Port = 587
		if cfg.TLS {
			cfg.Port = 465
		}
	}
	if cfg.StartTLS == "" {
		cfg.StartTLS = StartTLSMandatory
	}
	e := &emailExecutor{cfg: cfg, userAgent: userAgent(version), helo: "localhost"}
	if h, err := os.Hostname(); err == nil && h != "" {
		e.helo = h
	}
	e.from, e.fromErr = mail.ParseAddress(cfg.From)
	if cfg.TLSConfig != nil {
		e.tlsConfig = cfg.TLSConfig.Clone()
	} else {
		e.tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if e.tlsConfig.ServerName == "" {
		e.tlsConfig.ServerName = cfg.Host
	}
	return e
}

// Execute sends one message: to, cc and bcc from the payload, From the
// relay's sender, and tock's headers. Success means the relay accepted the
// message for every recipient; Output then says how many and quotes the
// relay's reply (usually a queue id).
func (e *emailExecutor) Execute(ctx context.Context, t Task) Outcome {
	if e.cfg.Host == "" {
		return failure("email is not configured (TOCK_SMTP_HOST)")
	}
	if e.fromErr != nil {
		return failure("email is not configured: TOCK_SMTP_FROM is not an address")
	}
	// Jobs are validated when created; checking again here keeps header
	// injection out even if a payload reached the queue another way.
	if err := checkEmail(t.Payload); err != nil {
		return failure("invalid email payload: %v", err)
	}
	var p EmailPayload
	if err := json.Unmarshal(t.Payload, &p); err != nil {
		return failure("invalid email payload: %v", err)
	}
	msg, rcpts, err := e.message(p, t)
	if err != nil {
		return failure("invalid email payload: %v", err)
	}

	start := time.Now()
	ctx, cancel, limit := withTimeout(ctx, t, start)
	defer cancel()
	// go-mail bounds each step by a timeout of its own rather than by ctx
	// after dialling: give it what is left of ctx, and close the connection
	// when ctx ends so that no step outlives it.
	connTimeout := gomail.DefaultTimeout
	if dl, ok := ctx.Deadline(); ok {
		connTimeout = time.Until(dl)
		if connTimeout <= 0 {
			return Outcome{Latency: time.Since(start), Error: e.describe(ctx, context.DeadlineExceeded, limit)}
		}
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			// go-mail leaves the connection open when EHLO, STARTTLS or AUTH fails.
			_ = c.Close()
		}
	}()
	dial := func(dctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := e.dial(dctx, network, addr)
		if err != nil {
			return nil, err
		}
		stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
		conns = append(conns, &stopConn{Conn: conn, stop: stop})
		return conn, nil
	}

	opts := []gomail.Option{
		gomail.WithPort(e.cfg.Port),
		gomail.WithHELO(e.helo),
		gomail.WithTimeout(connTimeout),
		gomail.WithTLSConfig(e.tlsConfig),
		gomail.WithDialContextFunc(dial),
		gomail.WithoutNoop(),
	}
	if e.cfg.TLS {
		// dial speaks TLS already; WithSSL only tells go-mail not to STARTTLS.
		opts = append(opts, gomail.WithSSL())
	} else {
		opts = append(opts, gomail.WithTLSPolicy(tlsPolicy(e.cfg.StartTLS)))
	}
	if e.cfg.Username != "" {
		opts = append(opts, gomail.WithOpportunisticSMTPAuth(smtpAuthPreference...),
			gomail.WithUsername(e.cfg.Username), gomail.WithPassword(e.cfg.Password))
	}
	client, err := gomail.NewClient(e.cfg.Host, opts...)
	if err != nil {
		return failure("email client: %s", e.redact(err.Error()))
	}
	err = client.DialAndSendWithContext(ctx, msg)
	latency := time.Since(start)
	// The relay has the message once it accepts DATA; a failure after that,
	// such as a QUIT cut by the deadline, does not undo the delivery.
	if err != nil && !msg.IsDelivered() {
		return Outcome{Latency: latency, Error: e.describe(ctx, err, limit)}
	}
	out := "sent to " + strconv.Itoa(rcpts) + " recipient"
	if rcpts != 1 {
		out += "s"
	}
	if r := strings.TrimSpace(msg.ServerResponse()); r != "" {
		out += ": " + r
	}
	return Outcome{OK: true, Latency: latency, Output: clean([]byte(e.redact(out)), OutputLimit)}
}

// message builds the message of payload p for attempt t and counts its
// recipients. p has been validated, so its addresses parse.
func (e *emailExecutor) message(p EmailPayload, t Task) (*gomail.Msg, int, error) {
	m := gomail.NewMsg()
	m.FromMailAddress(e.from)
	rcpts := 0
	for _, h := range []struct {
		addrs []string
		set   func(...*mail.Address)
	}{{p.To, m.ToMailAddress}, {p.Cc, m.CcMailAddress}, {p.Bcc, m.BccMailAddress}} {
		if len(h.addrs) == 0 {
			continue
		}
		list, err := parseAddresses(h.addrs)
		if err != nil {
			return nil, 0, err
		}
		h.set(list...)
		rcpts += len(list)
	}
	if p.ReplyTo != "" {
		a, err := mail.ParseAddress(p.ReplyTo)
		if err != nil {
			return nil, 0, errors.New("reply_to is not an address")
		}
		m.ReplyToMailAddress(a)
	}
	m.Subject(p.Subject)
	m.SetMessageIDWithValue(messageID(t.Key, e.from.Address))
	m.SetDate()
	m.SetUserAgent(e.userAgent)
	m.SetGenHeader(headerTockIdempotencyKey, t.Key)
	m.SetGenHeader(headerJobID, t.JobID.String())
	m.SetGenHeader(headerScheduledFor, t.ScheduledFor.UTC().Format(scheduledForLayout))
	m.SetGenHeader(headerAttempt, strconv.Itoa(t.Attempt))
	if !t.Nominal.IsZero() {
		m.SetGenHeader(headerNominalTime, t.Nominal.UTC().Format(scheduledForLayout))
	}
	if t.Backfill {
		m.SetGenHeader(headerBackfill, "true")
	}
	switch {
	case p.Text != "" && p.HTML != "":
		m.SetBodyString(gomail.TypeTextPlain, p.Text)
		m.AddAlternativeString(gomail.TypeTextHTML, p.HTML)
	case p.HTML != "":
		m.SetBodyString(gomail.TypeTextHTML, p.HTML)
	default:
		m.SetBodyString(gomail.TypeTextPlain, p.Text)
	}
	return m, rcpts, nil
}

// parseAddresses parses every address of a list.
func parseAddresses(list []string) ([]*mail.Address, error) {
	out := make([]*mail.Address, 0, len(list))
	for i, s := range list {
		a, err := mail.ParseAddress(s)
		if err != nil {
			return nil, fmt.Errorf("recipient %d is not an address", i+1)
		}
		out = append(out, a)
	}
	return out, nil
}

// messageID is the Message-ID (without its angle brackets) of the occurrence
// whose idempotency key is key: the key, whose colon is not allowed there,
// at the sender's domain.
func messageID(key, from string) string {
	domain := "tock"
	if i := strings.LastIndexByte(from, '@'); i >= 0 && isDotAtom(from[i+1:]) {
		domain = from[i+1:]
	}
	return strings.ReplaceAll(key, ":", ".") + "@" + domain
}

// isDotAtom reports whether s is a plain ASCII domain that a Message-ID can
// carry as it is.
func isDotAtom(s string) bool {
	if s == "" || strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") || strings.Contains(s, "..") {
		return false
	}
	for _, r := range s {
		if !(r == '.' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// tlsPolicy maps a STARTTLS setting to go-mail's; anything unknown is
// mandatory, the safe choice.
func tlsPolicy(s StartTLS) gomail.TLSPolicy {
	switch s {
	case StartTLSOpportunistic:
		return gomail.TLSOpportunistic
	case StartTLSNone:
		return gomail.NoTLS
	}
	return gomail.TLSMandatory
}

// dial connects to the relay, in TLS from the first byte if so configured.
func (e *emailExecutor) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{}
	if e.cfg.TLS {
		return (&tls.Dialer{NetDialer: d, Config: e.tlsConfig}).DialContext(ctx, network, addr)
	}
	return d.DialContext(ctx, network, addr)
}

// describe turns a send error into a short message for the run, without the
// password.
func (e *emailExecutor) describe(ctx context.Context, err error, limit time.Duration) string {
	// The connection's deadline is ctx's, so either may fire first.
	dl, hasDeadline := ctx.Deadline()
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), hasDeadline && !time.Now().Before(dl):
		if limit > 0 {
			return "timeout after " + limit.String()
		}
		return "timeout"
	case errors.Is(ctx.Err(), context.Canceled):
		return "cancelled before the relay answered"
	}
	return clean([]byte(e.redact(err.Error())), OutputLimit)
}

// redact removes the password from s, in case a relay or library quotes it.
func (e *emailExecutor) redact(s string) string {
	if e.cfg.Password == "" {
		return s
	}
	return strings.ReplaceAll(s, e.cfg.Password, "[redacted]")
}

// stopConn is a connection whose close also stops the watch that would close
// it when the attempt's context ends.
type stopConn struct {
	net.Conn
	stop func() bool
}

func (c *stopConn) Close() error {
	c.stop()
	return c.Conn.Close()
}
