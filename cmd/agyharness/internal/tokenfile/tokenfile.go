// Package tokenfile reads a secret from a file, so that it need not appear
// on a command line, where every user of the machine can read it in the
// process list. Every token file of the harness is read here: serve's
// bearer token (--token-file) and agy's CSRF token (--csrf-token-file of
// attach, launch and acp).
package tokenfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxSize bounds a token file: a token is short, and a path given by
// mistake (a log, a device such as /dev/zero) must not be read whole.
const MaxSize = 16 << 10

// Read returns the token in the file at path, without one trailing newline
// ("\n" or "\r\n", as editors and `echo` leave). An unreadable, empty or
// oversized file is an error that names the path. A regular file that its
// group or others may read (or write) is a warning, given to warn (when not nil) as
// one line that names the file, its mode and the fix; the token is still
// returned.
func Read(path string, warn func(line string)) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o077 != 0 && warn != nil {
		warn(fmt.Sprintf("token file %q is open to its group or others (mode %04o): run chmod 600 %q", path, fi.Mode().Perm(), path))
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	if len(b) > MaxSize {
		return "", fmt.Errorf("token file %s: larger than %d bytes", path, MaxSize)
	}
	token := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if token == "" {
		return "", errors.New("token file " + path + " is empty")
	}
	return token, nil
}

// Bearer-token rules (CheckBearer).
const (
	// MinLen is the shortest bearer token accepted, in characters.
	MinLen = 16
	// MinDistinct is the fewest different characters a bearer token may
	// be made of: "aaaaaaaaaaaaaaaa" and "abababababababab" are refused.
	// It catches a placeholder, not a weak token: make one with
	// `openssl rand -hex 32`.
	MinDistinct = 4
)

// CheckBearer refuses a token the harness is to accept as proof of a
// client (serve's bearer token), with the reason: shorter than MinLen
// characters, made of fewer than MinDistinct different characters (one
// repeated character among them), or holding a control character (it
// cannot be sent in an Authorization header). agy's CSRF token is agy's
// own, whatever it is: it is not checked.
func CheckBearer(token string) error {
	const how = "make one with `openssl rand -hex 32`"
	if n := len([]rune(token)); n < MinLen {
		return fmt.Errorf("the token is %d characters; it must be at least %d: %s", n, MinLen, how)
	}
	distinct := map[rune]bool{}
	for i, r := range token {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("the token holds a control character (U+%04X at byte %d), which cannot be sent in an Authorization header: %s", r, i, how)
		}
		distinct[r] = true
	}
	if len(distinct) == 1 {
		return fmt.Errorf("the token is one character repeated: %s", how)
	}
	if len(distinct) < MinDistinct {
		return fmt.Errorf("the token is made of %d different characters; it must have at least %d: %s", len(distinct), MinDistinct, how)
	}
	return nil
}
