package jobspec

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// NotShowable is the message that refuses text Showable refuses, after the
// field's name.
const NotShowable = "must be text without control characters (such as CR, LF, tab or ESC) " +
	"or bidirectional formatting characters (such as U+202E)"

// Showable reports whether s is text fit to show: valid UTF-8 without a
// control character (unicode.IsControl: C0 and C1, DEL, CR, LF, ESC, tab)
// or a bidirectional formatting character (U+061C, U+200E, U+200F,
// U+202A-U+202E, U+2066-U+2069). Names and labels are shown in the dashboard
// and in logs, where a line feed forges a log line, an escape sequence
// drives the operator's terminal, and a right-to-left override shows
// "exe.txt" for "txt.exe". Every text a user names something with is held
// to it: job names, label values and keys, user and API key names.
func Showable(s string) bool {
	return utf8.ValidString(s) && strings.IndexFunc(s, unfit) < 0
}

// unfit is a rune Showable refuses.
func unfit(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return true
	case r == '\u061c', r == '\u200e', r == '\u200f':
		// Arabic letter mark, left-to-right and right-to-left marks.
		return true
	case r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069':
		// Embeddings, overrides and isolates, and their pop.
		return true
	}
	return false
}
