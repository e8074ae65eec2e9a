package acp

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
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
	// Written whole, then renamed: a reader never sees half an id.
	tmp := filepath.Join(s.dir, "."+session+".tmp")
	if err := os.WriteFile(tmp, []byte(conversation+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(s.dir, session))
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
	b, err := os.ReadFile(filepath.Join(s.dir, session))
	if err != nil {
		return "", false
	}
	c := strings.TrimSpace(string(b))
	if c == "" {
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
