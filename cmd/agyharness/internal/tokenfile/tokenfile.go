// Package tokenfile reads a secret from a file, so that it need not appear
// on a command line, where every user of the machine can read it in the
// process list.
package tokenfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// maxSize bounds a token file: a token is short, and a path given by
// mistake (a log, a device) must not be read whole.
const maxSize = 16 << 10

// Read returns the token in the file at path, without one trailing newline
// ("\n" or "\r\n", as editors and `echo` leave). An unreadable, empty or
// oversized file is an error that names the path.
func Read(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	if len(b) > maxSize {
		return "", fmt.Errorf("token file %s: larger than %d bytes", path, maxSize)
	}
	token := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if token == "" {
		return "", errors.New("token file " + path + " is empty")
	}
	return token, nil
}
