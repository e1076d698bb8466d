package jobspec_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/jobtype"
)

// payloadCase is one payload given to ValidatePayload, and the field its
// error names ("" when it is valid).
type payloadCase struct {
	name    string
	payload string
	field   string
}

func runPayloadCases(t *testing.T, typ job.Type, tests []payloadCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := jobspec.ValidatePayload(typ, json.RawMessage(tt.payload), jobspec.DefaultLimits)
			if tt.field == "" {
				require.NoError(t, err)
				require.JSONEq(t, tt.payload, string(got))
				return
			}
			var fe *job.FieldError
			require.True(t, errors.As(err, &fe), "want a *FieldError, got %v", err)
			require.Equal(t, tt.field, fe.Field, fe.Error())
			require.ErrorIs(t, err, job.ErrInvalid)
			require.Nil(t, got)
		})
	}
}

// recipients returns n distinct addresses as a JSON array.
func recipients(n int) string {
	list := make([]string, n)
	for i := range list {
		list[i] = fmt.Sprintf("user%d@example.com", i)
	}
	b, _ := json.Marshal(list)
	return string(b)
}

// jsonString quotes s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestValidatePayloadSlack(t *testing.T) {
	t.Parallel()
	const hook = `"webhook_url":"https://hooks.slack.com/services/T000/B000/XXXX"`
	runPayloadCases(t, jobtype.TypeSlack, []payloadCase{
		{"Text", `{` + hook + `,"text":"deploy done"}`, ""},
		{"Blocks", `{` + hook + `,"blocks":[{"type":"section","text":{"type":"mrkdwn","text":"*hi*"}}]}`, ""},
		{"TextAndBlocks", `{` + hook + `,"text":"fallback","blocks":[{"type":"divider"}]}`, ""},
		{"HTTPWebhook", `{"webhook_url":"http://slack-proxy.internal:8080/hook","text":"x"}`, ""},
		{"TextAtLimit", `{` + hook + `,"text":` + jsonString(strings.Repeat("a", jobtype.MaxSlackTextLen)) + `}`, ""},
		{"BlocksAtLimit", `{` + hook + `,"blocks":[` + strings.TrimSuffix(strings.Repeat(`{"type":"divider"},`, jobtype.MaxSlackBlocks), ",") + `]}`, ""},

		{"TextAndBlocksMissing", `{` + hook + `}`, "payload.text"},
		{"TextBlank", `{` + hook + `,"text":"  "}`, "payload.text"},
		{"BlocksEmptyWithoutText", `{` + hook + `,"blocks":[]}`, "payload.text"},
		{"BlocksNullWithoutText", `{` + hook + `,"blocks":null}`, "payload.text"},
		{"TextTooLong", `{` + hook + `,"text":` + jsonString(strings.Repeat("a", jobtype.MaxSlackTextLen+1)) + `}`, "payload.text"},
		{"BlocksNotArray", `{` + hook + `,"blocks":{"type":"divider"}}`, "payload.blocks"},
		{"BlocksNotObjects", `{` + hook + `,"blocks":["divider"]}`, "payload.blocks"},
		{"BlocksNullEntry", `{` + hook + `,"blocks":[null]}`, "payload.blocks"},
		{"TooManyBlocks", `{` + hook + `,"blocks":[` + strings.TrimSuffix(strings.Repeat(`{"type":"divider"},`, jobtype.MaxSlackBlocks+1), ",") + `]}`, "payload.blocks"},
		{"WebhookURLMissing", `{"text":"x"}`, "payload.webhook_url"},
		{"WebhookURLNotHTTP", `{"webhook_url":"ftp://hooks.slack.com/services/x","text":"x"}`, "payload.webhook_url"},
		{"WebhookURLNoHost", `{"webhook_url":"https:///services/x","text":"x"}`, "payload.webhook_url"},
		{"WebhookURLRelative", `{"webhook_url":"/services/x","text":"x"}`, "payload.webhook_url"},
		{"WebhookURLWithCredentials", `{"webhook_url":"https://u:p@hooks.slack.com/services/x","text":"x"}`, "payload.webhook_url"},
		{"UnknownField", `{` + hook + `,"text":"x","channel":"#ops"}`, "payload"},
		{"WrongFieldType", `{` + hook + `,"text":5}`, "payload"},
	})
}

func TestValidatePayloadSlackCountsTextInCharacters(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("é", jobtype.MaxSlackTextLen) // twice as many bytes
	raw := json.RawMessage(`{"webhook_url":"https://hooks.slack.com/services/T/B/X","text":` + jsonString(text) + `}`)
	_, err := jobspec.ValidatePayload(jobtype.TypeSlack, raw, jobspec.Limits{})
	require.NoError(t, err)
}

func TestValidatePayloadEmail(t *testing.T) {
	t.Parallel()
	const rest = `"subject":"Nightly report","text":"All green."`
	runPayloadCases(t, jobtype.TypeEmail, []payloadCase{
		{"Minimal", `{"to":["ops@example.com"],` + rest + `}`, ""},
		{"Everything", `{"to":["Ops <ops@example.com>"],"cc":["a@example.com"],"bcc":["b@example.com"],"subject":"Report ✓","text":"x","html":"<p>x</p>","reply_to":"Support <support@example.com>"}`, ""},
		{"HTMLOnly", `{"to":["ops@example.com"],"subject":"s","html":"<p>x</p>"}`, ""},
		{"QuotedDisplayName", `{"to":["\"Ops, Team\" <ops@example.com>"],` + rest + `}`, ""},
		{"EncodedDisplayName", `{"to":["=?utf-8?q?J=C3=B6rg?= <jorg@example.com>"],` + rest + `}`, ""},
		{"RecipientsAtLimit", `{"to":` + recipients(jobtype.MaxEmailRecipients) + `,` + rest + `}`, ""},
		{"SubjectAtLimit", `{"to":["ops@example.com"],"subject":"` + strings.Repeat("s", jobtype.MaxEmailSubjectLen) + `","text":"x"}`, ""},
		{"SubjectWithTab", `{"to":["ops@example.com"],"subject":"a\tb","text":"x"}`, ""},

		{"ToMissing", `{` + rest + `}`, "payload.to"},
		{"ToEmpty", `{"to":[],` + rest + `}`, "payload.to"},
		{"OnlyCc", `{"cc":["ops@example.com"],` + rest + `}`, "payload.to"},
		{"TooManyRecipients", `{"to":` + recipients(30) + `,"cc":` + recipients(15) + `,"bcc":` + recipients(6) + `,` + rest + `}`, "payload.to"},
		{"ToNotAnAddress", `{"to":["not an address"],` + rest + `}`, "payload.to"},
		{"ToTwoAddressesInOne", `{"to":["a@example.com, b@example.com"],` + rest + `}`, "payload.to"},
		{"ToEmptyString", `{"to":[""],` + rest + `}`, "payload.to"},
		{"ToWithCRLF", `{"to":["ops@example.com\r\nBcc: victim@example.com"],` + rest + `}`, "payload.to"},
		{"ToWithLF", `{"to":["ops@example.com\nX: y"],` + rest + `}`, "payload.to"},
		{"ToDisplayNameWithCRLF", `{"to":["\"Ops\r\nBcc: victim@example.com\" <ops@example.com>"],` + rest + `}`, "payload.to"},
		{"ToEncodedDisplayNameWithCRLF", `{"to":["=?utf-8?q?Ops=0D=0ABcc:_victim@example.com?= <ops@example.com>"],` + rest + `}`, "payload.to"},
		{"ToWithNUL", `{"to":["ops\u0000@example.com"],` + rest + `}`, "payload.to"},
		{"CcBad", `{"to":["ops@example.com"],"cc":["nope"],` + rest + `}`, "payload.cc"},
		{"BccWithCR", `{"to":["ops@example.com"],"bcc":["b@example.com\r"],` + rest + `}`, "payload.bcc"},
		{"ReplyToBad", `{"to":["ops@example.com"],"reply_to":"nope",` + rest + `}`, "payload.reply_to"},
		{"ReplyToWithLF", `{"to":["ops@example.com"],"reply_to":"a@example.com\nBcc: v@example.com",` + rest + `}`, "payload.reply_to"},
		{"SubjectMissing", `{"to":["ops@example.com"],"text":"x"}`, "payload.subject"},
		{"SubjectBlank", `{"to":["ops@example.com"],"subject":"  ","text":"x"}`, "payload.subject"},
		{"SubjectWithCRLF", `{"to":["ops@example.com"],"subject":"hi\r\nBcc: victim@example.com","text":"x"}`, "payload.subject"},
		{"SubjectWithLF", `{"to":["ops@example.com"],"subject":"hi\nthere","text":"x"}`, "payload.subject"},
		{"SubjectWithCR", `{"to":["ops@example.com"],"subject":"hi\rthere","text":"x"}`, "payload.subject"},
		{"SubjectWithControl", `{"to":["ops@example.com"],"subject":"hi\u0007","text":"x"}`, "payload.subject"},
		{"SubjectTooLong", `{"to":["ops@example.com"],"subject":"` + strings.Repeat("s", jobtype.MaxEmailSubjectLen+1) + `","text":"x"}`, "payload.subject"},
		{"BodyMissing", `{"to":["ops@example.com"],"subject":"s"}`, "payload.text"},
		{"BodyBlank", `{"to":["ops@example.com"],"subject":"s","text":" ","html":""}`, "payload.text"},
		{"UnknownField", `{"to":["ops@example.com"],` + rest + `,"from":"ceo@example.com"}`, "payload"},
		{"ToNotAList", `{"to":"ops@example.com",` + rest + `}`, "payload"},
	})
}

func TestSpecBuildAcceptsSlackAndEmail(t *testing.T) {
	t.Parallel()
	for _, s := range []spec{
		{"name": "notify", "type": jobtype.TypeSlack, "run_at": now.Add(time.Hour),
			"payload": json.RawMessage(`{"webhook_url": "https://hooks.slack.com/services/T/B/X", "text": "hi"}`)},
		{"name": "mail", "type": jobtype.TypeEmail, "run_at": now.Add(time.Hour),
			"payload": json.RawMessage(`{"to": ["ops@example.com"], "subject": "s", "text": "x"}`)},
	} {
		j, err := s.Build(owner, now, jobspec.DefaultLimits)
		require.NoError(t, err, s["type"])
		require.Equal(t, s["type"], j.Type)
		require.NotContains(t, string(j.Payload), " ", "payload compacted")
	}
}
