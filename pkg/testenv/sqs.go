package testenv

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/google/uuid"
)

// The static credentials and region an SQS fake accepts. A process that
// should reach it gets them through the AWS SDK's environment variables
// (SQSEnv).
const (
	SQSAccessKey = "AKIDTOCKTEST"
	SQSSecretKey = "tock-test-secret"
	SQSRegion    = "eu-central-1"
)

// SQSMessage is one message an SQS fake accepted.
type SQSMessage struct {
	Queue           string
	ID              string
	Body            string
	GroupID         string
	DeduplicationID string
	Sequence        string
	Attributes      map[string]string
}

// SQS stands in for Amazon SQS: it speaks the JSON protocol's SendMessage,
// verifies every request's SigV4 signature against the static credentials,
// and keeps what it accepted. A FIFO queue (a name ending in .fifo) drops a
// message whose deduplication id it saw in the last five minutes and
// answers with the first one's id, as SQS does.
type SQS struct {
	// URL is the server's base: a queue's URL is URL/<account>/<name>.
	URL string
	srv *httptest.Server
	// failing makes every request answer 500 InternalError.
	failing atomic.Bool

	mu    sync.Mutex
	msgs  []SQSMessage
	dedup map[string]SQSMessage
	seq   int64
	errs  []error
}

// NewSQS starts an SQS fake for the test.
func NewSQS(t testing.TB) *SQS {
	t.Helper()
	f := &SQS{dedup: map[string]SQSMessage{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	f.URL = f.srv.URL
	t.Cleanup(f.srv.Close)
	return f
}

// QueueURL is the URL of the queue named name.
func (f *SQS) QueueURL(name string) string { return f.URL + "/000000000000/" + name }

// Host is the fake's host:port, for TOCK_SQS_HOSTS.
func (f *SQS) Host() string { return strings.TrimPrefix(f.URL, "http://") }

// Env is what a process needs to reach the fake: the credentials and
// region in the AWS SDK's variables, and the fake allowed as an SQS host.
func (f *SQS) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + SQSAccessKey, "AWS_SECRET_ACCESS_KEY=" + SQSSecretKey,
		"AWS_REGION=" + SQSRegion, "AWS_EC2_METADATA_DISABLED=true", "TOCK_SQS_HOSTS=" + f.Host()}
}

// SetFailing makes the fake answer every request with a 500 while on.
func (f *SQS) SetFailing(on bool) { f.failing.Store(on) }

// Messages returns the messages the fake accepted, in order, and fails the
// test if any request was unsigned, badly signed or malformed.
func (f *SQS) Messages(t testing.TB) []SQSMessage {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := errors.Join(f.errs...); err != nil {
		t.Fatalf("SQS fake: %v", err)
	}
	return append([]SQSMessage(nil), f.msgs...)
}

// Err is every malformed or badly signed request the fake saw.
func (f *SQS) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return errors.Join(f.errs...)
}

// Forget clears the errors seen so far, after a test provoked them.
func (f *SQS) Forget() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = nil
}

type sqsAttribute struct {
	DataType    string
	StringValue string
}

type sendMessage struct {
	QueueUrl               string
	MessageBody            string
	MessageGroupId         string
	MessageDeduplicationId string
	MessageAttributes      map[string]sqsAttribute
}

func (f *SQS) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var in sendMessage
	err = verifySigV4(r, raw, "sqs")
	if err == nil && (r.Header.Get("X-Amz-Target") != "AmazonSQS.SendMessage" || r.Header.Get("Content-Type") != "application/x-amz-json-1.0") {
		err = fmt.Errorf("not a JSON-protocol SendMessage: target %q, content type %q", r.Header.Get("X-Amz-Target"), r.Header.Get("Content-Type"))
	}
	if err == nil {
		err = json.Unmarshal(raw, &in)
	}
	if err != nil {
		f.mu.Lock()
		f.errs = append(f.errs, err)
		f.mu.Unlock()
		sqsError(w, http.StatusBadRequest, "InvalidSecurity", err.Error())
		return
	}
	if f.failing.Load() {
		sqsError(w, http.StatusInternalServerError, "InternalError", "try again")
		return
	}
	name := in.QueueUrl[strings.LastIndex(in.QueueUrl, "/")+1:]
	fifo := strings.HasSuffix(name, ".fifo")
	switch {
	case !strings.HasPrefix(in.QueueUrl, f.URL+"/"):
		sqsError(w, http.StatusBadRequest, "QueueDoesNotExist", "The specified queue does not exist.")
		return
	case fifo && (in.MessageGroupId == "" || in.MessageDeduplicationId == ""):
		sqsError(w, http.StatusBadRequest, "MissingParameter", "A FIFO queue needs MessageGroupId and MessageDeduplicationId.")
		return
	case !fifo && in.MessageDeduplicationId != "":
		sqsError(w, http.StatusBadRequest, "InvalidParameterValue", "MessageDeduplicationId applies only to FIFO queues.")
		return
	}
	m := SQSMessage{Queue: name, ID: uuid.NewString(), Body: in.MessageBody, GroupID: in.MessageGroupId,
		DeduplicationID: in.MessageDeduplicationId, Attributes: map[string]string{}}
	for k, v := range in.MessageAttributes {
		m.Attributes[k] = v.StringValue
	}
	f.mu.Lock()
	if fifo {
		if first, ok := f.dedup[name+"\x00"+m.DeduplicationID]; ok {
			m = first
		} else {
			f.seq++
			m.Sequence = strconv.FormatInt(f.seq, 10)
			f.dedup[name+"\x00"+m.DeduplicationID] = m
			f.msgs = append(f.msgs, m)
		}
	} else {
		f.msgs = append(f.msgs, m)
	}
	f.mu.Unlock()
	sum := md5.Sum([]byte(in.MessageBody))
	out := map[string]string{"MessageId": m.ID, "MD5OfMessageBody": hex.EncodeToString(sum[:])}
	if m.Sequence != "" {
		out["SequenceNumber"] = m.Sequence
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	_ = json.NewEncoder(w).Encode(out)
}

func sqsError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-Query-Error", "AWS.SimpleQueueService."+code+";Sender")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.sqs#" + code, "message": msg})
}

// verifySigV4 checks that r, whose body was raw, carries a valid SigV4
// signature by the static test credentials for service: it signs the same
// request again with the headers r says it signed, and compares.
func verifySigV4(r *http.Request, raw []byte, service string) error {
	auth := r.Header.Get("Authorization")
	const algo = "AWS4-HMAC-SHA256 "
	if !strings.HasPrefix(auth, algo) {
		return fmt.Errorf("not signed with SigV4: %q", auth)
	}
	fields := map[string]string{}
	for f := range strings.SplitSeq(strings.TrimPrefix(auth, algo), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 || scope[0] != SQSAccessKey || scope[3] != service || scope[4] != "aws4_request" {
		return fmt.Errorf("credential scope %q is not the test key's for %s", fields["Credential"], service)
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("X-Amz-Date: %w", err)
	}
	if d := time.Since(at); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("signed at %s, too far from now", at)
	}
	sum := sha256.Sum256(raw)
	hash := hex.EncodeToString(sum[:])
	if h := r.Header.Get("X-Amz-Content-Sha256"); h != "" && h != hash {
		return fmt.Errorf("X-Amz-Content-Sha256 %q does not match the body", h)
	}
	again, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(raw))
	if err != nil {
		return err
	}
	for h := range strings.SplitSeq(fields["SignedHeaders"], ";") {
		if h != "host" && h != "content-length" {
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	creds := aws.Credentials{AccessKeyID: SQSAccessKey, SecretAccessKey: SQSSecretKey}
	if err := v4.NewSigner().SignHTTP(r.Context(), creds, again, hash, service, scope[2], at); err != nil {
		return err
	}
	if want := again.Header.Get("Authorization"); want != auth {
		return fmt.Errorf("bad signature: got %q, want %q", auth, want)
	}
	return nil
}
