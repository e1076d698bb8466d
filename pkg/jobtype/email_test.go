package jobtype_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log"
	"math/big"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/jobtype"
)

// delivered is one message as the relay received it.
type delivered struct {
	From string
	To   []string
	Data []byte
}

// relay is an SMTP server on 127.0.0.1 that records what it accepts.
type relay struct {
	host string
	port int
	// cert is the relay's certificate when it speaks TLS, for the client to trust.
	cert *x509.Certificate

	// username and password, when set, are required before MAIL.
	username, password string
	// reject is a recipient the relay refuses.
	reject string
	// hold, when set, makes DATA wait for it to close.
	hold chan struct{}

	mu   sync.Mutex
	msgs []delivered
}

func (r *relay) delivered() []delivered {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivered(nil), r.msgs...)
}

// relayOptions configure startRelay.
type relayOptions struct {
	username, password string
	reject             string
	hold               bool
	// starttls offers STARTTLS; implicit speaks TLS from the first byte.
	starttls, implicit bool
}

// startRelay starts a relay and stops it when the test ends.
func startRelay(t *testing.T, o relayOptions) *relay {
	t.Helper()
	r := &relay{username: o.username, password: o.password, reject: o.reject}
	if o.hold {
		r.hold = make(chan struct{})
		t.Cleanup(func() { close(r.hold) })
	}
	s := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &session{r: r}, nil }))
	s.Domain = "relay.test"
	s.ReadTimeout, s.WriteTimeout = 10*time.Second, 10*time.Second
	s.AllowInsecureAuth = true
	s.ErrorLog = log.New(io.Discard, "", 0)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	if o.starttls || o.implicit {
		cfg, cert := selfSigned(t)
		r.cert = cert
		if o.implicit {
			ln = tls.NewListener(ln, cfg)
		} else {
			s.TLSConfig = cfg
		}
	}
	addr := ln.Addr().(*net.TCPAddr)
	r.host, r.port = addr.IP.String(), addr.Port
	served := make(chan struct{})
	go func() { defer close(served); _ = s.Serve(ln) }()
	// Close the listener too: a Close that runs before Serve has registered
	// it would leave Serve accepting.
	t.Cleanup(func() { _ = s.Close(); _ = ln.Close(); <-served })
	return r
}

// config is an EmailConfig reaching r with STARTTLS none (or trusting r's
// certificate when it has one).
func (r *relay) config() jobtype.EmailConfig {
	c := jobtype.EmailConfig{
		Host: r.host, Port: r.port, From: "Tock <tock@example.com>",
		StartTLS: jobtype.StartTLSNone, Username: r.username, Password: r.password,
	}
	if r.cert != nil {
		pool := x509.NewCertPool()
		pool.AddCert(r.cert)
		c.TLSConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return c
}

// session is one SMTP session of a relay.
type session struct {
	r      *relay
	authed bool
	from   string
	to     []string
}

func (s *session) AuthMechanisms() []string {
	if s.r.username == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, username, password string) error {
		if username != s.r.username || password != s.r.password {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "authentication failed"}
		}
		s.authed = true
		return nil
	}), nil
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if s.r.username != "" && !s.authed {
		return smtp.ErrAuthRequired
	}
	s.from = from
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if to == s.r.reject {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
	}
	s.to = append(s.to, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	if s.r.hold != nil {
		<-s.r.hold
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.r.mu.Lock()
	s.r.msgs = append(s.r.msgs, delivered{From: s.from, To: append([]string(nil), s.to...), Data: b})
	s.r.mu.Unlock()
	return nil
}

func (s *session) Reset() { s.from, s.to = "", nil }

func (s *session) Logout() error { return nil }

// selfSigned returns a server TLS config with a fresh certificate for
// 127.0.0.1, and the certificate for a client to trust.
func selfSigned(t *testing.T) (*tls.Config, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "relay.test"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		MinVersion:   tls.VersionTLS12,
	}, cert
}

// parsed is a delivered message read back: its headers and the text of each
// body part by media type.
type parsed struct {
	Header mail.Header
	Bodies map[string]string
}

func parse(t *testing.T, data []byte) parsed {
	t.Helper()
	m, err := mail.ReadMessage(bytes.NewReader(data))
	require.NoError(t, err)
	p := parsed{Header: m.Header, Bodies: map[string]string{}}
	mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	require.NoError(t, err)
	if !strings.HasPrefix(mt, "multipart/") {
		p.Bodies[mt] = decodeBody(t, m.Header.Get("Content-Transfer-Encoding"), m.Body)
		return p
	}
	mr := multipart.NewReader(m.Body, params["boundary"])
	for {
		part, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		pt, _, err := mime.ParseMediaType(part.Header.Get("Content-Type"))
		require.NoError(t, err)
		p.Bodies[pt] = decodeBody(t, part.Header.Get("Content-Transfer-Encoding"), part)
	}
	return p
}

func decodeBody(t *testing.T, cte string, r io.Reader) string {
	t.Helper()
	if strings.EqualFold(cte, "quoted-printable") {
		r = quotedprintable.NewReader(r)
	}
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	return string(b)
}

// emailTask is an attempt of an email job with payload p.
func emailTask(t *testing.T, p jobtype.EmailPayload) jobtype.Task {
	t.Helper()
	return task(t, jobtype.TypeEmail, p)
}

// simple is a valid payload to one recipient.
var simple = jobtype.EmailPayload{To: []string{"ops@example.com"}, Subject: "Nightly report", Text: "All green."}

func TestEmail(t *testing.T) {
	t.Parallel()

	t.Run("SendsMessageWithTockHeaders", func(t *testing.T) {
		t.Parallel()
		r := startRelay(t, relayOptions{})
		e := jobtype.NewEmail(r.config(), version)
		tk := emailTask(t, jobtype.EmailPayload{
			To:      []string{"Ops Team <ops@example.com>", "dev@example.com"},
			Cc:      []string{"lead@example.com"},
			Bcc:     []string{"audit@example.com"},
			Subject: "Nightly report: ünïcode ✓",
			Text:    "All green.\nSee you tomorrow.",
			ReplyTo: "support@example.com",
		})
		out := execute(t, e, tk)
		require.True(t, out.OK, out.Error)
		require.True(t, strings.HasPrefix(out.Output, "sent to 4 recipients"), out.Output)
		require.Empty(t, out.Error)
		require.Zero(t, out.StatusCode)
		require.Positive(t, out.Latency)

		got := r.delivered()
		require.Len(t, got, 1)
		require.Equal(t, "tock@example.com", got[0].From)
		require.Equal(t, []string{"ops@example.com", "dev@example.com", "lead@example.com", "audit@example.com"}, got[0].To)

		m := parse(t, got[0].Data)
		dec := new(mime.WordDecoder)
		subject, err := dec.DecodeHeader(m.Header.Get("Subject"))
		require.NoError(t, err)
		require.Equal(t, "Nightly report: ünïcode ✓", subject)
		from, err := m.Header.AddressList("From")
		require.NoError(t, err)
		require.Equal(t, []*mail.Address{{Name: "Tock", Address: "tock@example.com"}}, from)
		to, err := m.Header.AddressList("To")
		require.NoError(t, err)
		require.Equal(t, []*mail.Address{{Name: "Ops Team", Address: "ops@example.com"}, {Address: "dev@example.com"}}, to)
		require.Contains(t, m.Header.Get("Cc"), "lead@example.com")
		require.Empty(t, m.Header.Get("Bcc"), "bcc recipients are in the envelope only")
		require.NotContains(t, string(got[0].Data), "audit@example.com")
		require.Contains(t, m.Header.Get("Reply-To"), "support@example.com")

		require.Equal(t, tk.Key, m.Header.Get("X-Tock-Idempotency-Key"))
		require.Equal(t, "<"+jobID.String()+".1795338000000@example.com>", m.Header.Get("Message-Id"))
		require.Equal(t, jobID.String(), m.Header.Get("X-Tock-Job-Id"))
		require.Equal(t, "2026-11-22T09:00:00.000Z", m.Header.Get("X-Tock-Scheduled-For"))
		require.Equal(t, "2", m.Header.Get("X-Tock-Attempt"))
		require.Equal(t, "tock/"+version, m.Header.Get("User-Agent"))
		_, err = m.Header.Date()
		require.NoError(t, err)
		require.Equal(t, map[string]string{"text/plain": "All green.\r\nSee you tomorrow."}, trimBodies(m.Bodies))
	})

	t.Run("SendsTextAndHTMLAsAlternatives", func(t *testing.T) {
		t.Parallel()
		r := startRelay(t, relayOptions{})
		out := execute(t, jobtype.NewEmail(r.config(), version), emailTask(t, jobtype.EmailPayload{
			To: []string{"ops@example.com"}, Subject: "Report", Text: "plain", HTML: "<p>rich</p>",
		}))
		require.True(t, out.OK, out.Error)
		require.Equal(t, "sent to 1 recipient", strings.SplitN(out.Output, ":", 2)[0])
		m := parse(t, r.delivered()[0].Data)
		require.True(t, strings.HasPrefix(m.Header.Get("Content-Type"), "multipart/alternative"), m.Header.Get("Content-Type"))
		require.Equal(t, map[string]string{"text/plain": "plain", "text/html": "<p>rich</p>"}, trimBodies(m.Bodies))
	})

	t.Run("SendsHTMLOnly", func(t *testing.T) {
		t.Parallel()
		r := startRelay(t, relayOptions{})
		out := execute(t, jobtype.NewEmail(r.config(), version), emailTask(t, jobtype.EmailPayload{
			To: []string{"ops@example.com"}, Subject: "Report", HTML: "<p>rich</p>",
		}))
		require.True(t, out.OK, out.Error)
		require.Equal(t, map[string]string{"text/html": "<p>rich</p>"}, trimBodies(parse(t, r.delivered()[0].Data).Bodies))
	})

	t.Run("EveryAttemptHasTheSameMessageID", func(t *testing.T) {
		t.Parallel()
		r := startRelay(t, relayOptions{})
		e := jobtype.NewEmail(r.config(), version)
		first, second := emailTask(t, simple), emailTask(t, simple)
		second.Attempt = 3
		require.True(t, execute(t, e, first).OK)
		require.True(t, execute(t, e, second).OK)
		got := r.delivered()
		require.Len(t, got, 2)
		a, b := parse(t, got[0].Data).Header, parse(t, got[1].Data).Header
		require.Equal(t, a.Get("Message-Id"), b.Get("Message-Id"))
		require.Equal(t, a.Get("X-Tock-Idempotency-Key"), b.Get("X-Tock-Idempotency-Key"))
		require.Equal(t, "3", b.Get("X-Tock-Attempt"))
	})

	t.Run("AuthenticatesWithUsernameAndPassword", func(t *testing.T) {
		t.Parallel()
		r := startRelay(t, relayOptions{username: "tock", password: "hunter2-s3cret"})
		out := execute(t, jobtype.NewEmail(r.config(), version), emailTask(t, simple))
		require.True(t, out.OK, out.Error)
		require.Len(t, r.delivered(), 1)
	})

	t.Run("FailsOnWrongPasswordWithoutQuotingIt", func(t *testing.T) {
		t.Parallel()
		r := startRelay(t, relayOptions{username: "tock", password: "right-password"})
		cfg := r.config()
		cfg.Password = "wrong-s3cret-password"
		out := execute(t, jobtype.NewEmail(cfg, version), emailTask(t, simple))
		require.False(t, out.OK)
		require.Contains(t, out.Error, "535")
		require.NotContains(t, out.Error, "wrong-s3cret-password")
		require.NotContains(t, out.Output, "wrong-s3cret-password")
		require.Empty(t, r.delivered())
	})

	t.Run("FailsWithoutCredentialsWhenRelayRequiresThem", func(t *testing.T) {
		t.Parallel()
		r := startRelay(t, relayOptions{username: "tock", password: "pw"})
		cfg := r.config()
		cfg.Username, cfg.Password = "", ""
		out := execute(t, jobtype.NewEmail(cfg, version), emailTask(t, simple))
		require.False(t, out.OK)
		require.Contains(t, out.Error, "Please authenticate first")
	})

	t.Run("FailsWhenRelayRejectsARecipient", func(t *testing.T) {
		t.Parallel()
		r := startRelay(t, relayOptions{reject: "nobody@example.com"})
		out := execute(t, jobtype.NewEmail(r.config(), version), emailTask(t, jobtype.EmailPayload{
			To: []string{"ops@example.com", "nobody@example.com"}, Subject: "Report", Text: "x",
		}))
		require.False(t, out.OK)
		require.Contains(t, out.Error, "550")
		require.Contains(t, out.Error, "nobody@example.com")
		require.Empty(t, r.delivered(), "no message goes out unless every recipient is accepted")
	})

	t.Run("FailsOnConnectionRefused", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port := ln.Addr().(*net.TCPAddr).Port
		require.NoError(t, ln.Close())
		cfg := jobtype.EmailConfig{Host: "127.0.0.1", Port: port, From: "tock@example.com", StartTLS: jobtype.StartTLSNone, Username: "u", Password: "pw-s3cret"}
		out := execute(t, jobtype.NewEmail(cfg, version), emailTask(t, simple))
		require.False(t, out.OK)
		require.Contains(t, out.Error, "connection refused")
		require.NotContains(t, out.Error, "pw-s3cret")
	})

	t.Run("TimesOutWithinDeadlineOnSilentServer", func(t *testing.T) {
		t.Parallel()
		host, port := silentServer(t)
		tk := emailTask(t, simple)
		tk.Timeout = 200 * time.Millisecond
		cfg := jobtype.EmailConfig{Host: host, Port: port, From: "tock@example.com", StartTLS: jobtype.StartTLSNone}
		start := time.Now()
		out := execute(t, jobtype.NewEmail(cfg, version), tk)
		require.Less(t, time.Since(start), 5*time.Second, "a bound on hanging, not a performance assertion")
		require.False(t, out.OK)
		require.Equal(t, "timeout after 200ms", out.Error)
	})

	t.Run("TimesOutWithinDeadlineDuringData", func(t *testing.T) {
		t.Parallel()
		r := startRelay(t, relayOptions{hold: true})
		tk := emailTask(t, simple)
		tk.Timeout = 300 * time.Millisecond
		start := time.Now()
		// No deadline of its own: the task's timeout must bound it.
		out := jobtype.NewEmail(r.config(), version).Execute(t.Context(), tk)
		require.Less(t, time.Since(start), 5*time.Second, "a bound on hanging, not a performance assertion")
		require.False(t, out.OK)
		require.Equal(t, "timeout after 300ms", out.Error)
	})

	t.Run("FailsWhenNotConfigured", func(t *testing.T) {
		t.Parallel()
		out := execute(t, jobtype.NewEmail(jobtype.EmailConfig{}, version), emailTask(t, simple))
		require.False(t, out.OK)
		require.Equal(t, "email is not configured (TOCK_SMTP_HOST)", out.Error)
	})

	t.Run("RefusesHeaderInjection", func(t *testing.T) {
		t.Parallel()
		r := startRelay(t, relayOptions{})
		e := jobtype.NewEmail(r.config(), version)
		for _, p := range []jobtype.EmailPayload{
			{To: []string{"ops@example.com"}, Subject: "hi\r\nBcc: victim@example.com", Text: "x"},
			{To: []string{"ops@example.com\r\nBcc: victim@example.com"}, Subject: "hi", Text: "x"},
			{To: []string{"=?utf-8?q?a=0D=0ABcc:_victim@example.com?= <ops@example.com>"}, Subject: "hi", Text: "x"},
			{To: []string{"ops@example.com"}, Subject: "hi", Text: "x", ReplyTo: "a@example.com\nBcc: victim@example.com"},
		} {
			out := execute(t, e, emailTask(t, p))
			require.False(t, out.OK, "%+v", p)
			require.Contains(t, out.Error, "invalid email payload")
		}
		require.Empty(t, r.delivered())
	})

	t.Run("UpgradesWithMandatorySTARTTLS", func(t *testing.T) {
		t.Parallel()
		r := startRelay(t, relayOptions{starttls: true, username: "tock", password: "pw"})
		cfg := r.config()
		cfg.StartTLS = jobtype.StartTLSMandatory
		out := execute(t, jobtype.NewEmail(cfg, version), emailTask(t, simple))
		require.True(t, out.OK, out.Error)
		require.Len(t, r.delivered(), 1)
	})

	t.Run("RefusesRelayWithoutSTARTTLSWhenMandatory", func(t *testing.T) {
		t.Parallel()
		r := startRelay(t, relayOptions{})
		cfg := r.config()
		cfg.StartTLS = jobtype.StartTLSMandatory
		out := execute(t, jobtype.NewEmail(cfg, version), emailTask(t, simple))
		require.False(t, out.OK)
		require.Contains(t, out.Error, "STARTTLS")
		require.Empty(t, r.delivered())
	})

	t.Run("RefusesUntrustedCertificate", func(t *testing.T) {
		t.Parallel()
		r := startRelay(t, relayOptions{starttls: true})
		cfg := r.config()
		cfg.StartTLS, cfg.TLSConfig = jobtype.StartTLSMandatory, nil
		out := execute(t, jobtype.NewEmail(cfg, version), emailTask(t, simple))
		require.False(t, out.OK)
		require.Contains(t, out.Error, "certificate")
		require.Empty(t, r.delivered())
	})

	t.Run("SendsOverImplicitTLS", func(t *testing.T) {
		t.Parallel()
		r := startRelay(t, relayOptions{implicit: true, username: "tock", password: "pw"})
		cfg := r.config()
		cfg.TLS, cfg.StartTLS = true, jobtype.StartTLSMandatory
		out := execute(t, jobtype.NewEmail(cfg, version), emailTask(t, simple))
		require.True(t, out.OK, out.Error)
		require.Len(t, r.delivered(), 1)
	})

	t.Run("RegistryRoutesEmail", func(t *testing.T) {
		t.Parallel()
		r := startRelay(t, relayOptions{})
		reg := jobtype.NewRegistry(jobtype.Deps{Version: version, Email: r.config()})
		out := execute(t, reg, emailTask(t, simple))
		require.True(t, out.OK, out.Error)
		require.Len(t, r.delivered(), 1)

		out = execute(t, jobtype.NewRegistry(jobtype.Deps{Version: version, Email: jobtype.EmailConfig{}}), emailTask(t, simple))
		require.Equal(t, "email is not configured (TOCK_SMTP_HOST)", out.Error)
	})

	t.Run("ConfigStringOmitsPassword", func(t *testing.T) {
		t.Parallel()
		cfg := jobtype.EmailConfig{Host: "smtp.example.com", Port: 587, Username: "tock", Password: "hunter2-s3cret"}
		for _, s := range []string{cfg.String(), cfg.GoString()} {
			require.Contains(t, s, "smtp.example.com")
			require.NotContains(t, s, "hunter2-s3cret")
		}
	})
}

// trimBodies drops the line break a body part ends with.
func trimBodies(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = strings.TrimRight(v, "\r\n")
	}
	return out
}

// silentServer accepts connections on 127.0.0.1 and never says a word, until
// the client hangs up or the test ends.
func silentServer(t *testing.T) (string, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				_, _ = io.Copy(io.Discard, c)
			})
		}
	})
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	addr := ln.Addr().(*net.TCPAddr)
	return addr.IP.String(), addr.Port
}
