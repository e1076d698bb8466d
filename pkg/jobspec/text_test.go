package jobspec_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
)

// TestShowable: text fit to show refuses every control character and every
// bidirectional formatting character, and nothing else a name may hold.
func TestShowable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want bool
	}{
		{"Plain", "nightly report", true},
		{"Empty", "", true},
		{"Accents", "relevé de compte", true},
		{"RightToLeftScript", "تقرير ليلي", true},
		{"CJK", "夜間レポート", true},
		{"Emoji", "report 📈", true},
		{"ZeroWidthJoiner", "👩\u200d💻", true},
		{"NoBreakSpace", "a\u00a0b", true},
		{"NUL", "a\x00b", false},
		{"CR", "a\rb", false},
		{"LF", "a\nb", false},
		{"TrailingLF", "report\n", false},
		{"Tab", "a\tb", false},
		{"ESC", "a\x1b[31mred", false},
		{"DEL", "a\x7fb", false},
		{"C1NextLine", "a\u0085b", false},
		{"C1CSI", "a\u009bb", false},
		{"ArabicLetterMark", "a\u061cb", false},
		{"LeftToRightMark", "a\u200eb", false},
		{"RightToLeftMark", "a\u200fb", false},
		{"LeftToRightEmbedding", "a\u202ab", false},
		{"PopDirectionalFormatting", "a\u202cb", false},
		{"RightToLeftOverride", "invoice\u202efdp.exe", false},
		{"LeftToRightIsolate", "a\u2066b", false},
		{"PopDirectionalIsolate", "a\u2069b", false},
		{"InvalidUTF8", "a\xffb", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, jobspec.Showable(tt.text), "%q", tt.text)
		})
	}
}

// TestUnshowableTextIsRefused: a job's name, label values and key are held to
// Showable, each refused with its field named, and so is a PATCH of them.
func TestUnshowableTextIsRefused(t *testing.T) {
	t.Parallel()
	fields := []struct {
		name  string
		set   func(s spec, bad string)
		patch bool
		field string
	}{
		{"Name", func(s spec, bad string) { s["name"] = "report " + bad }, true, "name"},
		{"LabelValue", func(s spec, bad string) { s["labels"] = map[string]string{"team": bad} }, true, "labels.team"},
		{"Key", func(s spec, bad string) { s["key"] = "k" + bad }, false, "key"},
	}
	for _, bad := range []string{"CR\r", "LF\nforged log line", "\x1b[2J", "tab\there", "\u0085", "txt\u202eexe", "\u2066isolate\u2069", "\u200f", "name\n"} {
		for _, f := range fields {
			t.Run(f.name+"/"+strconv.QuoteToASCII(bad), func(t *testing.T) {
				t.Parallel()
				s := validSpec()
				f.set(s, bad)
				_, err := s.Build(owner, now, jobspec.DefaultLimits)
				var fe *job.FieldError
				require.ErrorAs(t, err, &fe)
				require.Equal(t, f.field, fe.Field, "error: %v", err)
				if !f.patch {
					return
				}
				good := validSpec()
				j, err := good.Build(owner, now, jobspec.DefaultLimits)
				require.NoError(t, err)
				p := spec{}
				f.set(p, bad)
				err = patch(j, p)
				require.ErrorAs(t, err, &fe)
				require.Equal(t, f.field, fe.Field, "error: %v", err)
				require.Equal(t, "nightly report", j.Name, "the job is unchanged")
			})
		}
	}
}
