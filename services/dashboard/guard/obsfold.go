package guard

import (
	"bytes"
	"errors"
	"net"
	"net/textproto"
	"strings"

	"go.uber.org/zap"
)

// StrictListener wraps the listener the dashboard's http.Server reads plain
// HTTP/1.1 from, so that a request with an obs-fold line (a header line that
// begins with a space or a tab, continuing the one before it) is answered
// 400 and never reaches a handler. RFC 9112 §5.2 lets a server refuse such a
// request or replace each fold with a space; Go's net/textproto does the
// latter before any handler can tell, so a proxy in front that read the line
// as a header of its own, or dropped it, and tock would act on different
// headers. tock refuses instead.
//
// Each connection's bytes are followed as the server reads them (see
// foldScanner); the first byte of a folded line becomes foldMark, which Go's
// parser refuses: "400 Bad Request", and the connection is closed. Where the
// framing is not one the scanner follows for certain, the rest of the
// connection passes untouched, for Go to judge as before. Every refusal is
// logged, with the peer's address only. It must not wrap a TLS listener: the
// scanner would see ciphertext (it stops at the first byte that cannot
// start a request, so it would pass it through unchecked).
func StrictListener(ln net.Listener, log *zap.Logger) net.Listener {
	return &strictListener{Listener: ln, log: log}
}

type strictListener struct {
	net.Listener
	log *zap.Logger
}

func (l *strictListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &strictConn{Conn: c, log: l.log}, nil
}

// strictConn scans what is read from it. net/http never reads a connection
// from two goroutines at once, which the scanner relies on.
type strictConn struct {
	net.Conn
	log  *zap.Logger
	scan foldScanner
}

func (c *strictConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.scan.scan(p[:n]) {
		c.log.Info("obs_fold_refused", zap.String("remote_addr", c.RemoteAddr().String()))
	}
	return n, err
}

// CloseWrite keeps the half-close that net/http does, when the connection
// has one, before it hangs up on some refused requests (a header section or
// a body too large): wrapping the TCP connection would otherwise hide it.
func (c *strictConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// foldMark replaces the space or tab that begins an obs-fold line. The line
// then has an empty field name, which no HTTP parser accepts: net/textproto
// returns a ProtocolError ("malformed MIME header line") and net/http
// answers "400 Bad Request" with Connection: close. (0x01 would do as well:
// not a token byte either; ':' reads better in a packet capture.)
const foldMark = ':'

// scanState is where in a request the next byte falls.
type scanState uint8

const (
	stRequest     scanState = iota // before a request line, past any CR and LF
	stMethod                       // in the request line's method
	stTarget                       // in the rest of the request line
	stFieldStart                   // at the start of a header or trailer line
	stFieldCR                      // after a CR at the start of one
	stField                        // in a header or trailer line
	stBody                         // in a Content-Length body
	stChunkSize                    // in a chunk-size
	stChunkExt                     // past it: a chunk extension or whitespace
	stChunkLF                      // after the CR that ends a chunk-size line
	stChunkData                    // in a chunk's data
	stChunkCR                      // after a chunk's data, before its CR
	stChunkDataLF                  // after that CR
	stOff                          // passing everything through
)

// foldScanner follows the HTTP/1.1 requests of one connection, a byte at a
// time whatever the reads' sizes, to find the lines of header and trailer
// sections that begin with SP or HTAB. It frames requests as Go's server
// does when Go accepts them: lines end at LF (see lineByte for CR); a body
// by Content-Length or chunked coding, or none; a few CR and LF before a
// request line. When Go would refuse the bytes, the scanner may read them
// otherwise, as Go hangs up. It keeps nothing but the first bytes of the
// current line, and gives up (stOff) on what it does not follow for certain:
// a Content-Length it cannot read or that comes twice, a Transfer-Encoding
// other than one "chunked", both headers, a framing header longer than head,
// a version other than HTTP/1.1, CONNECT or Upgrade (what follows may not be
// HTTP), and bytes that cannot start a request (TLS, say), so the only byte
// it ever changes is one that makes Go refuse the request (or, in a trailer
// section, fail the handler's read of the body).
type foldScanner struct {
	state  scanState
	n      int      // bytes in the current line, past those head holds
	head   [64]byte // the current line's first bytes
	tail   uint64   // its last eight bytes, for the request line's version
	msg    message  // what the current request's header section said
	remain uint64   // bytes left of a body or a chunk, or the chunk-size so far
	digits int      // hex digits read of the chunk-size
}

// message is what a request's header section says of its body.
type message struct {
	http11  bool  // the request line ends in HTTP/1.1
	tunnel  bool  // CONNECT or Upgrade: what follows the header section may not be HTTP
	length  int64 // Content-Length, or -1
	chunked bool  // Transfer-Encoding: chunked
	unsure  bool  // a framing header the scanner does not follow
	trailer bool  // the field lines now read are the trailer section
}

// http11 is the request line's last eight bytes when the version is HTTP/1.1.
var http11 = uint64('H')<<56 | uint64('T')<<48 | uint64('T')<<40 | uint64('P')<<32 |
	uint64('/')<<24 | uint64('1')<<16 | uint64('.')<<8 | uint64('1')

// scan follows p, the next bytes read from the connection, and rewrites in
// place the first byte of an obs-fold line. It reports whether it did; it
// then passes the rest of the connection through, since Go refuses the
// request and hangs up.
func (s *foldScanner) scan(p []byte) (folded bool) {
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch s.state {
		case stOff:
			return false
		case stRequest:
			switch {
			case c == '\r' || c == '\n':
			case isTchar(c):
				s.msg = message{length: -1}
				s.beginLine()
				s.keep(c)
				s.state = stMethod
			default:
				s.state = stOff
			}
		case stMethod:
			switch {
			case c == ' ':
				s.msg.tunnel = string(s.head[:min(s.n, len(s.head))]) == "CONNECT"
				s.keep(c)
				s.state = stTarget
			case isTchar(c):
				s.keep(c)
			default:
				s.state = stOff
			}
		case stTarget:
			if s.lineByte(c) {
				s.msg.http11 = s.tail == http11
				s.state = stFieldStart
			}
		case stFieldStart:
			switch c {
			case ' ', '\t':
				p[i] = foldMark
				s.state = stOff
				return true
			case '\n':
				s.endSection()
			case '\r':
				s.state = stFieldCR
			default:
				s.beginLine()
				s.keep(c)
				s.state = stField
			}
		case stFieldCR:
			if c != '\n' {
				s.state = stOff // a line that begins with CR: Go refuses it
				continue
			}
			s.endSection()
		case stField:
			if s.lineByte(c) {
				s.endField()
				s.state = stFieldStart
			}
		case stBody, stChunkData:
			// The data is skipped at once: k bytes from p[i], the loop's
			// i++ stepping past the last.
			k := min(s.remain, uint64(len(p)-i))
			s.remain -= k
			i += int(k) - 1
			switch {
			case s.remain > 0:
			case s.state == stBody:
				s.state = stRequest
			default:
				s.state = stChunkCR
			}
		case stChunkSize:
			v, hex := unhex(c)
			switch {
			case hex && s.digits < 16:
				s.remain = s.remain<<4 | v
				s.digits++
			case s.digits == 0:
				s.state = stOff
			case c == '\r':
				s.state = stChunkLF
			case c == ';' || c == ' ' || c == '\t':
				s.state = stChunkExt
			default:
				s.state = stOff
			}
		case stChunkExt:
			switch c {
			case '\r':
				s.state = stChunkLF
			case '\n':
				s.state = stOff // Go refuses a bare LF in a chunked line
			}
		case stChunkLF:
			switch {
			case c != '\n':
				s.state = stOff
			case s.remain == 0:
				s.msg.trailer = true
				s.state = stFieldStart
			default:
				s.state = stChunkData
			}
		case stChunkCR:
			s.state = stOff
			if c == '\r' {
				s.state = stChunkDataLF
			}
		case stChunkDataLF:
			s.state = stOff
			if c == '\n' {
				s.remain, s.digits = 0, 0
				s.state = stChunkSize
			}
		}
	}
	return false
}

func (s *foldScanner) beginLine() {
	s.n, s.tail = 0, 0
}

// keep adds c to the current line.
func (s *foldScanner) keep(c byte) {
	if s.n < len(s.head) {
		s.head[s.n] = c
	}
	s.n++
	s.tail = s.tail<<8 | uint64(c)
}

// lineByte takes the next byte of a request or field line and reports
// whether it ended the line. A CR is not kept: before the LF it is part of
// the line's end, and anywhere else in the line Go refuses it (in a method,
// a target, a version, a field name or a field value), except as trailing
// whitespace of a value, which is trimmed anyway.
func (s *foldScanner) lineByte(c byte) bool {
	switch c {
	case '\n':
		return true
	case '\r':
	default:
		s.keep(c)
	}
	return false
}

// endField notes a header line that decides how the body is framed.
// A trailer section's lines are read too, but the section's end ignores
// them.
func (s *foldScanner) endField() {
	line := s.head[:min(s.n, len(s.head))]
	colon := bytes.IndexByte(line, ':')
	if colon < 0 {
		return // a name longer than any the scanner needs, or none (Go refuses)
	}
	name, value := line[:colon], textproto.TrimBytes(line[colon+1:])
	whole := s.n <= len(s.head)
	switch {
	case bytes.EqualFold(name, []byte("Content-Length")):
		n, ok := parseLength(value)
		s.msg.unsure = s.msg.unsure || !whole || !ok || s.msg.length >= 0
		s.msg.length = n
	case bytes.EqualFold(name, []byte("Transfer-Encoding")):
		s.msg.unsure = s.msg.unsure || !whole || s.msg.chunked || !bytes.EqualFold(value, []byte("chunked"))
		s.msg.chunked = true
	case bytes.EqualFold(name, []byte("Upgrade")):
		s.msg.tunnel = true
	}
}

// endSection moves on from the empty line that ends a header or trailer
// section: to the body, to the next request, or off.
func (s *foldScanner) endSection() {
	m := s.msg
	switch {
	case m.trailer:
		s.state = stRequest
	case m.unsure || m.tunnel || !m.http11 || m.chunked && m.length >= 0:
		s.state = stOff
	case m.chunked:
		s.remain, s.digits = 0, 0
		s.state = stChunkSize
	case m.length > 0:
		s.remain = uint64(m.length)
		s.state = stBody
	default:
		s.state = stRequest
	}
}

// parseLength reads a Content-Length of 1 to 18 digits, as Go reads one
// that fits in an int64.
func parseLength(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return -1, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return -1, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

func unhex(c byte) (uint64, bool) {
	switch {
	case '0' <= c && c <= '9':
		return uint64(c - '0'), true
	case 'a' <= c && c <= 'f':
		return uint64(c - 'a' + 10), true
	case 'A' <= c && c <= 'F':
		return uint64(c - 'A' + 10), true
	}
	return 0, false
}

// isTchar reports whether c may appear in a token (RFC 9110 §5.6.2), such
// as a method.
func isTchar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
