package acp

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
)

// sessionStore remembers the agy conversation of each ACP session whose id
// is not that conversation's: a session opened on a fresh agy gets its id
// before agy has a conversation (agy mints one for the first turn), and
// session/load must find it. It keeps them in memory, and in dir when dir
// is set (one file per session, named by the session id, holding the
// conversation id) so that an adapter started again finds them.
type sessionStore struct {
	dir string

	mu    sync.Mutex
	convs map[string]string // session id -> conversation id
}

// sessionIDShape is what a session id must look like to name a file.
var sessionIDShape = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

func newSessionStore(dir string) *sessionStore {
	return &sessionStore{dir: dir, convs: make(map[string]string)}
}

// put records that session follows conversation.
func (s *sessionStore) put(session, conversation string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.convs[session] == conversation {
		return nil
	}
	s.convs[session] = conversation
	if s.dir == "" {
		return nil
	}
	if !sessionIDShape.MatchString(session) {
		return fmt.Errorf("session id %q cannot name a file", session)
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	// Written whole to a file of a random name that this call creates
	// (O_EXCL, 0600: never one planted there, nor through a symbolic link),
	// then renamed over the session's name: a reader never sees half an
	// id, and a link of that name is replaced, not followed.
	f, err := os.CreateTemp(s.dir, "."+session+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.WriteString(conversation + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(s.dir, session))
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// maxSessionFile bounds what is read of a session's file: it holds one
// conversation id.
const maxSessionFile = 4 << 10

// readSessionFile reads a session's file, never through a symbolic link,
// and at most maxSessionFile bytes of it.
func readSessionFile(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSessionFile+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxSessionFile {
		return "", fmt.Errorf("%s is over %d bytes", path, maxSessionFile)
	}
	return strings.TrimSpace(string(b)), nil
}

// sessionDirWarning says what is unsafe about dir as --session-dir, if it
// exists: writable by group or others, who could then plant or replace the
// files that name the conversations session/load binds. "" when nothing is.
func sessionDirWarning(dir string) string {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return ""
	}
	if m := fi.Mode().Perm(); m&0o022 != 0 {
		return fmt.Sprintf("session directory %s is writable by group or others (mode %04o): they can replace the conversation a session/load binds; chmod go-w it", dir, m)
	}
	return ""
}

// conversation returns the conversation session follows, if it is known.
func (s *sessionStore) conversation(session string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.convs[session]; ok {
		return c, true
	}
	if s.dir == "" || !sessionIDShape.MatchString(session) {
		return "", false
	}
	c, err := readSessionFile(filepath.Join(s.dir, session))
	if err != nil || c == "" {
		return "", false
	}
	s.convs[session] = c
	return c, true
}

// newSessionID is the id of a session opened on an agy with no
// conversation yet: a random UUID, as agy's conversation ids are.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// defaultSessionDir is where `agyharness acp` keeps its sessions'
// conversations: <user config dir>/agyharness/acp-sessions.
func defaultSessionDir() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", errors.Join(errors.New("no user config directory"), err)
	}
	return filepath.Join(dir, "agyharness", "acp-sessions"), nil
}
