package agystart

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestClassify(t *testing.T) {
	for screen, want := range map[string]Screen{
		"starting...":                               ScreenUnknown,
		"> \n? for shortcuts":                       ScreenReady,
		"> \nESC to cancel":                         ScreenRunning,
		"older\nesc to cancel\n> \n? for shortcuts": ScreenReady,
		"Do you trust the contents of this project?\n> Yes, I trust this folder": ScreenTrust,
		"How's the CLI experience so far?\n esc to cancel":                       ScreenSurvey,
		"You are not logged into Antigravity.":                                   ScreenSignIn,
		"⚠ Eligibility Check\nEligibility check failed: not eligible":            ScreenIneligible,
		// A conversation that quotes the dialogs, under agy's input.
		"> what does 'Do you trust the contents of this project?' mean\n> \n? for shortcuts": ScreenReady,
		"> please sign in to the site\n> \n? for shortcuts":                                  ScreenReady,
	} {
		assert.Equal(t, want, Classify(screen), "%q", screen)
	}
}

// pane is a scripted agy terminal: its screen is what show returns; the
// keys pressed and turns typed are recorded, and onKey/onType change it.
type pane struct {
	mu     sync.Mutex
	screen string
	keys   []string
	typed  []string
	onKey  func(p *pane, key string)
	onType func(p *pane, text string)
}

func (p *pane) Capture(ctx context.Context) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.screen, nil
}

func (p *pane) Press(ctx context.Context, keys ...string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys = append(p.keys, keys...)
	for _, k := range keys {
		if p.onKey != nil {
			p.onKey(p, k)
		}
	}
	return nil
}

func (p *pane) Type(ctx context.Context, text string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.typed = append(p.typed, text)
	if p.onType != nil {
		p.onType(p, text)
	}
	return nil
}

func (p *pane) set(screen string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.screen = screen
}

func (p *pane) pressed() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.keys)
}

func (p *pane) turns() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.typed)
}

func fast(o Options) Options {
	o.Poll, o.Probe, o.RetryDelay, o.ReadyTimeout = time.Millisecond, 50*time.Millisecond, 5*time.Millisecond, 5*time.Second
	return o
}

const ready = "> \n? for shortcuts"

func TestGateWaitsForTheInputAndDismissesTheSurvey(t *testing.T) {
	p := &pane{screen: "loading"}
	p.onKey = func(p *pane, k string) {
		if k == "Escape" {
			p.screen = ready
		}
	}
	g := Start(p, fast(Options{}))
	defer g.Stop()
	require.Never(t, func() bool { return g.Err() != nil || len(p.pressed()) > 0 }, 30*time.Millisecond, time.Millisecond)
	select {
	case <-g.Done():
		t.Fatal("ready before agy's input showed")
	default:
	}
	p.set("How's the CLI experience so far?\nesc to cancel")
	require.NoError(t, g.Wait(context.Background()))
	assert.Equal(t, []string{"Escape"}, p.pressed())
}

func TestGateStopsOnScreensItDoesNotAnswer(t *testing.T) {
	for screen, code := range map[string]string{
		"Do you trust the contents of this project?\n> Yes, I trust this folder\n  No, exit": CodeWorkspaceUntrusted,
		"You are not logged into Antigravity.\n> 1. Sign in with Google":                     CodeNotSignedIn,
		"Eligibility check failed: Your current account is not eligible for Antigravity.":    CodeAccountIneligible,
	} {
		p := &pane{screen: screen}
		g := Start(p, fast(Options{Where: "tmux session w"}))
		err := g.Wait(context.Background())
		g.Stop()
		var se *Error
		require.True(t, errors.As(err, &se), "%v", err)
		assert.Equal(t, code, se.Code)
		assert.Contains(t, se.Message, "start again")
		assert.Empty(t, p.pressed(), "nothing pressed on %q", screen)
		// A turn is never typed then: it says so.
		terr := g.Type(context.Background(), "hello")
		assert.ErrorContains(t, terr, "the turn was not typed")
		assert.Empty(t, p.turns())
	}
	p := &pane{screen: "Do you trust the contents of this project?"}
	g := Start(p, fast(Options{}))
	defer g.Stop()
	assert.ErrorContains(t, g.Wait(context.Background()), "--trust-workspace")
}

func TestGateAnswersTrustWithTheFlag(t *testing.T) {
	p := &pane{screen: "Do you trust the contents of this project?\n> Yes, I trust this folder"}
	p.onKey = func(p *pane, k string) { p.screen = ready }
	g := Start(p, fast(Options{TrustWorkspace: true}))
	defer g.Stop()
	require.NoError(t, g.Wait(context.Background()))
	assert.Equal(t, []string{"Enter"}, p.pressed())
}

// A turn agy answers with its eligibility notice is typed again until agy
// takes it; once taken, turns are typed once with no watch.
func TestTypeRetypesATurnAgyRefusedWhileVerifying(t *testing.T) {
	p := &pane{screen: ready}
	p.onType = func(p *pane, text string) {
		if len(p.typed) < 3 {
			p.screen = strings.Repeat("! Verifying your account eligibility. Try again.\n", len(p.typed)) + ready
			return
		}
		p.screen = "> " + text + "\n> \nesc to cancel"
	}
	g := Start(p, fast(Options{}))
	defer g.Stop()
	require.NoError(t, g.Type(context.Background(), "hello"))
	assert.Equal(t, []string{"hello", "hello", "hello"}, p.turns())
	p.onType = nil
	require.NoError(t, g.Type(context.Background(), "next"))
	assert.Equal(t, []string{"hello", "hello", "hello", "next"}, p.turns())
}

// A turn with no sign of refusal is typed once, even if it ran too briefly
// to be seen running; an agy older than the account check gets no watch.
func TestTypeNeverTypesATurnTwiceWithoutTheNotice(t *testing.T) {
	p := &pane{screen: "! Verifying your account eligibility. Try again.\n" + ready}
	g := Start(p, fast(Options{}))
	defer g.Stop()
	require.NoError(t, g.Type(context.Background(), "hello"))
	assert.Equal(t, []string{"hello"}, p.turns(), "an old notice on screen is no refusal")

	p = &pane{screen: ready}
	p.onType = func(p *pane, text string) { p.screen = "! Verifying your account eligibility.\n" + ready }
	g2 := Start(p, fast(Options{Version: "1.1.7"}))
	defer g2.Stop()
	require.NoError(t, g2.Type(context.Background(), "hello"))
	assert.Equal(t, []string{"hello"}, p.turns(), "agy 1.1.7 is not known to check the account")
}

func TestTypeGivesUpWithItsContext(t *testing.T) {
	p := &pane{screen: ready}
	p.onType = func(p *pane, text string) { p.screen += "\n! Verifying your account eligibility." }
	g := Start(p, fast(Options{}))
	defer g.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := g.Type(ctx, "hello")
	var se *Error
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Equal(t, CodeNotReady, se.Code)
	assert.Contains(t, se.Message, "the turn was not taken")
}

func TestGateTypesAnywayWhenTheFooterNeverShows(t *testing.T) {
	p := &pane{screen: "some other agy"}
	o := fast(Options{})
	o.ReadyTimeout = 20 * time.Millisecond
	g := Start(p, o)
	defer g.Stop()
	require.NoError(t, g.Wait(context.Background()))
}
