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
		spec  func(s *jobspec.Spec, bad string)
		patch func(p *jobspec.Patch, bad string)
		field string
	}{
		{"Name", func(s *jobspec.Spec, bad string) { s.Name = "report " + bad },
			func(p *jobspec.Patch, bad string) { p.Name = ptr("report " + bad) }, "name"},
		{"LabelValue", func(s *jobspec.Spec, bad string) { s.Labels = map[string]string{"team": bad} },
			func(p *jobspec.Patch, bad string) { p.Labels = map[string]string{"team": bad} }, "labels.team"},
		{"Key", func(s *jobspec.Spec, bad string) { s.Key = "k" + bad }, nil, "key"},
	}
	for _, bad := range []string{"CR\r", "LF\nforged log line", "\x1b[2J", "tab\there", "\u0085", "txt\u202eexe", "\u2066isolate\u2069", "\u200f", "name\n"} {
		for _, f := range fields {
			t.Run(f.name+"/"+strconv.QuoteToASCII(bad), func(t *testing.T) {
				t.Parallel()
				s := validSpec()
				f.spec(&s, bad)
				_, err := s.Build(owner, now, jobspec.DefaultLimits)
				var fe *job.FieldError
				require.ErrorAs(t, err, &fe)
				require.Equal(t, f.field, fe.Field, "error: %v", err)
				if f.patch == nil {
					return
				}
				good := validSpec()
				j, err := good.Build(owner, now, jobspec.DefaultLimits)
				require.NoError(t, err)
				var p jobspec.Patch
				f.patch(&p, bad)
				err = p.Apply(j, false, now, jobspec.DefaultLimits)
				require.ErrorAs(t, err, &fe)
				require.Equal(t, f.field, fe.Field, "error: %v", err)
				require.Equal(t, "nightly report", j.Name, "the job is unchanged")
			})
		}
	}
}
