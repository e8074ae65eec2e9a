// Package agystart waits for an agy the harness started in a terminal it
// owns (launch, acp) to take turns, and types turns there so that none is
// lost while agy starts.
//
// agy takes a turn only once its input is up and its account check is
// done, and may first show a screen that takes the keyboard. Read from its
// pane (docs/DECISIONS.md, "Starting agy", has the sources):
//   - its input: the footer "? for shortcuts" (idle) or "esc to cancel"
//     (a turn runs) under the draft;
//   - the account check: for some seconds after start (7 to 9 on agy 1.1.8)
//     a typed turn leaves the draft and is answered with a notice
//     "verifying your account eligibility" instead of running;
//   - the trust dialog ("Do you trust the contents of this project?"):
//     answered Yes (Enter, its preselected row) only with
//     Options.TrustWorkspace, else the start fails;
//   - the feedback survey ("How's the CLI experience"): dismissed with
//     Escape, before the first turn and before every typed turn (a turn
//     typed into it is lost);
//   - a sign-in or onboarding screen, or agy's "Eligibility check failed":
//     the start fails with what the person must do.
//
// A Gate watches the pane from Start until agy's input is ready (or the
// start failed), and is the session's actors.Terminal: Type waits for
// that, and types the first turn again when agy answered it with the
// eligibility notice (and only then: a turn agy may have taken is never
// typed twice).
package agystart

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/agyharness/agyharness/agyversion"
)

// Pane is agy's terminal as the gate uses it (*tmuxpane.Session).
type Pane interface {
	// Capture returns the pane's visible text.
	Capture(ctx context.Context) (string, error)
	// Press presses keys (tmux key names).
	Press(ctx context.Context, keys ...string) error
	// Type types text as a turn and presses Enter.
	Type(ctx context.Context, text string) error
}

// Options say how a Gate answers agy's startup screens.
type Options struct {
	// TrustWorkspace answers agy's trust dialog Yes (--trust-workspace).
	// Without it the dialog fails the start.
	TrustWorkspace bool
	// Version is agy's version ("" unknown): whether agy shows its input
	// footer and runs the account check is keyed by it (agyversion.Table).
	Version string
	// Where names agy's terminal for the person ("tmux session X").
	Where string
	// ReadyTimeout bounds the wait for agy's input footer; past it turns
	// are typed anyway, with a warning (an agy whose footer reads
	// otherwise). Default 20s.
	ReadyTimeout time.Duration
	// Poll is how often the pane is read. Default 100ms.
	Poll time.Duration
	// Probe is how long after typing a first turn the gate looks for agy's
	// eligibility notice. Default 2s.
	Probe time.Duration
	// RetryDelay is the wait before a turn agy refused is typed again.
	// Default 3s.
	RetryDelay time.Duration
	// Logger gets what the gate did (a survey dismissed, a turn retyped).
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.ReadyTimeout, 20*time.Second)
	def(&o.Poll, 100*time.Millisecond)
	def(&o.Probe, 2*time.Second)
	def(&o.RetryDelay, 3*time.Second)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Where == "" {
		o.Where = "agy's terminal"
	}
	return o
}

// Codes of Error.
const (
	CodeWorkspaceUntrusted = "workspace_untrusted"
	CodeNotSignedIn        = "not_signed_in"
	CodeAccountIneligible  = "account_ineligible"
	CodeNotReady           = "agy_not_ready"
)

// Error is a start that failed: agy shows a screen the harness does not
// answer, or never took the turn. Message says what the person must do.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Screen is what agy's pane shows, as far as starting goes.
type Screen string

// The screens Classify tells apart.
const (
	ScreenUnknown    Screen = ""           // none of the others (agy still drawing)
	ScreenReady      Screen = "ready"      // agy's input, idle
	ScreenRunning    Screen = "running"    // agy's input, a turn runs
	ScreenTrust      Screen = "trust"      // the trust dialog
	ScreenSurvey     Screen = "survey"     // the feedback survey
	ScreenSignIn     Screen = "sign_in"    // sign-in or onboarding
	ScreenIneligible Screen = "ineligible" // "Eligibility check failed"
)

// Markers, matched case-insensitively.
const (
	idleFooter    = "? for shortcuts"
	runningFooter = "esc to cancel"
	// EligibilityNotice is agy's answer to a turn typed before its account
	// check is done.
	EligibilityNotice = "verifying your account eligibility"
)

var (
	trustMarkers      = []string{"do you trust the contents of this project", "yes, i trust this folder", "do you trust this project"}
	surveyMarkers     = []string{"how's the cli experience", "how is the cli experience"}
	signInMarkers     = []string{"not logged into antigravity", "please sign in", "sign in with google", "choose a login method", "how would you like to sign in"}
	ineligibleMarkers = []string{"eligibility check failed"}
)

// Classify says what screen the pane shows. The survey is told by its
// question wherever it is (its footer is the running one); the trust,
// sign-in and eligibility screens only where agy's input footer is not
// shown (so a conversation that quotes them is not taken for them).
func Classify(screen string) Screen {
	s := strings.ToLower(screen)
	if containsAny(s, surveyMarkers) {
		return ScreenSurvey
	}
	footer := strings.Contains(s, idleFooter) || strings.Contains(s, runningFooter)
	switch {
	case !footer && containsAny(s, ineligibleMarkers):
		return ScreenIneligible
	case !footer && containsAny(s, signInMarkers):
		return ScreenSignIn
	case !footer && containsAny(s, trustMarkers):
		return ScreenTrust
	case lastLineWith(s, runningFooter) > lastLineWith(s, idleFooter):
		return ScreenRunning
	case strings.Contains(s, idleFooter):
		return ScreenReady
	}
	return ScreenUnknown
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// lastLineWith is the index of the last line of s holding sub, -1 if none.
func lastLineWith(s, sub string) int {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], sub) {
			return i
		}
	}
	return -1
}

// notices counts agy's eligibility notices on screen.
func notices(screen string) int {
	return strings.Count(strings.ToLower(screen), EligibilityNotice)
}

// Gate watches agy's pane while agy starts, and is the session's terminal
// (actors.Terminal). Its goroutine (Start) ends once agy's input is ready,
// the start failed, or Stop.
type Gate struct {
	pane Pane
	opts Options

	done   chan struct{} // closed when the watch ended; err is set then
	err    error
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	accepted bool // agy took a typed turn: its account check is done
}

// Start watches pane until agy's input is ready, answering what is safe
// to answer on the way. Stop ends the watch.
func Start(pane Pane, opts Options) *Gate {
	ctx, cancel := context.WithCancel(context.Background())
	g := &Gate{pane: pane, opts: opts.withDefaults(), done: make(chan struct{}), cancel: cancel}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer close(g.done)
		g.err = g.watch(ctx)
	}()
	return g
}

// Stop ends the watch and waits for its goroutine.
func (g *Gate) Stop() {
	g.cancel()
	g.wg.Wait()
}

// Done is closed once the watch ended (Err then says how).
func (g *Gate) Done() <-chan struct{} { return g.done }

// Err is nil while the watch runs or when agy's input is ready, else why
// the start failed (an *Error, or the watch stopped).
func (g *Gate) Err() error {
	select {
	case <-g.done:
		return g.err
	default:
		return nil
	}
}

// Wait waits until agy's input is ready (nil) or the start failed.
func (g *Gate) Wait(ctx context.Context) error {
	select {
	case <-g.done:
		return g.err
	case <-ctx.Done():
		return &Error{Code: CodeNotReady, Message: fmt.Sprintf("agy's input was not ready in time (%s)", g.opts.Where)}
	}
}

var errStopped = errors.New("agystart: stopped")

func (g *Gate) watch(ctx context.Context) error {
	o := g.opts
	timeout := o.ReadyTimeout
	if !agyversion.Has(o.Version, agyversion.InputFooter) {
		// An agy older than the footer: only look out for its screens a while.
		timeout = min(timeout, 2*time.Second)
	}
	deadline := time.Now().Add(timeout)
	var trustPressed, surveyPressed time.Time
	trustTries := 0
	for {
		screen, err := g.pane.Capture(ctx)
		if ctx.Err() != nil {
			return errStopped
		}
		if err != nil {
			return &Error{Code: CodeNotReady, Message: fmt.Sprintf("reading agy's terminal (%s): %v", o.Where, err)}
		}
		switch Classify(screen) {
		case ScreenReady, ScreenRunning:
			return nil
		case ScreenIneligible:
			return &Error{Code: CodeAccountIneligible, Message: "agy says its account check failed: " + excerpt(screen, ineligibleMarkers[0]) +
				" Verify the account in agy's terminal (run agy once by hand), then start again."}
		case ScreenSignIn:
			return &Error{Code: CodeNotSignedIn, Message: fmt.Sprintf("agy is not signed in (%s shows its sign-in screen): run agy once by hand and sign in, then start again", o.Where)}
		case ScreenTrust:
			if !o.TrustWorkspace {
				return &Error{Code: CodeWorkspaceUntrusted, Message: fmt.Sprintf("agy asks whether to trust this folder (%s): start again with --trust-workspace to answer Yes, or run agy there once by hand and trust it", o.Where)}
			}
			if time.Since(trustPressed) > time.Second {
				if trustTries++; trustTries > 3 {
					return &Error{Code: CodeWorkspaceUntrusted, Message: fmt.Sprintf("agy's trust dialog stayed after Enter was pressed %d times (%s): answer it in agy's terminal", trustTries-1, o.Where)}
				}
				o.Logger.Info("answering agy's trust dialog Yes (--trust-workspace)", "where", o.Where)
				if err := g.pane.Press(ctx, "Enter"); err != nil && ctx.Err() == nil {
					return &Error{Code: CodeNotReady, Message: fmt.Sprintf("answering agy's trust dialog: %v", err)}
				}
				trustPressed = time.Now()
			}
		case ScreenSurvey:
			if time.Since(surveyPressed) > time.Second {
				o.Logger.Info("dismissing agy's feedback survey (Escape)", "where", o.Where)
				_ = g.pane.Press(ctx, "Escape")
				surveyPressed = time.Now()
			}
		}
		if time.Now().After(deadline) {
			if agyversion.Has(o.Version, agyversion.InputFooter) {
				o.Logger.Warn("agy's terminal never showed its input footer; typing turns anyway", "where", o.Where, "waited", timeout, "footer", idleFooter)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return errStopped
		case <-time.After(o.Poll):
		}
	}
}

// excerpt is the line of screen that holds marker and the next one, as
// agy wrote them (the caller's output passes termtext), 300 bytes at most.
func excerpt(screen, marker string) string {
	lines := strings.Split(screen, "\n")
	for i, l := range lines {
		if strings.Contains(strings.ToLower(l), marker) {
			text := strings.TrimSpace(l)
			if i+1 < len(lines) {
				text = strings.TrimSpace(text + " " + strings.TrimSpace(lines[i+1]))
			}
			if len(text) > 300 {
				text = strings.ToValidUTF8(text[:300], "") + "…"
			}
			return text
		}
	}
	return ""
}

// Press presses keys in agy's terminal.
func (g *Gate) Press(ctx context.Context, keys ...string) error { return g.pane.Press(ctx, keys...) }

// Type types a turn once agy's input is ready. A survey on screen is
// dismissed first. Until agy took a turn (and when agy's version runs the
// account check), the gate then watches for agy's eligibility notice: a
// turn agy answered with it (the notice count grew and no turn runs) is
// typed again after Options.RetryDelay, until ctx ends; a turn agy may
// have taken is never typed again.
func (g *Gate) Type(ctx context.Context, text string) error {
	if err := g.Wait(ctx); err != nil {
		return fmt.Errorf("%w; the turn was not typed", err)
	}
	g.dismissSurvey(ctx)
	g.mu.Lock()
	probe := !g.accepted && agyversion.Has(g.opts.Version, agyversion.EligibilityCheck)
	g.mu.Unlock()
	if !probe {
		return g.pane.Type(ctx, text)
	}
	for attempt := 1; ; attempt++ {
		before, err := g.pane.Capture(ctx)
		if err != nil {
			return err
		}
		if err := g.pane.Type(ctx, text); err != nil {
			return err
		}
		refused, err := g.refused(ctx, notices(before))
		if err != nil {
			return err
		}
		if !refused {
			g.mu.Lock()
			g.accepted = true
			g.mu.Unlock()
			return nil
		}
		g.opts.Logger.Info("agy is still verifying the account and refused the turn; typing it again", "where", g.opts.Where, "attempt", attempt, "in", g.opts.RetryDelay)
		select {
		case <-ctx.Done():
			return &Error{Code: CodeNotReady, Message: fmt.Sprintf("agy kept verifying the account (its notice: %q) and refused the turn %d times; the turn was not taken", EligibilityNotice, attempt)}
		case <-time.After(g.opts.RetryDelay):
		}
	}
}

// refused watches the pane for Options.Probe after a turn was typed: the
// turn runs (agy took it: false), or agy's eligibility notice shows once
// more than the before it was typed while no turn runs (true). Neither by
// the end: taken (false).
func (g *Gate) refused(ctx context.Context, before int) (bool, error) {
	end := time.Now().Add(g.opts.Probe)
	for {
		screen, err := g.pane.Capture(ctx)
		if err != nil {
			return false, err
		}
		switch {
		case Classify(screen) == ScreenRunning:
			return false, nil
		case notices(screen) > before:
			return true, nil
		case time.Now().After(end):
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(g.opts.Poll):
		}
	}
}

// dismissSurvey presses Escape while agy's survey is on screen, a few
// times at most.
func (g *Gate) dismissSurvey(ctx context.Context) {
	for range 3 {
		screen, err := g.pane.Capture(ctx)
		if err != nil || Classify(screen) != ScreenSurvey {
			return
		}
		g.opts.Logger.Info("dismissing agy's feedback survey (Escape) before typing a turn", "where", g.opts.Where)
		if g.pane.Press(ctx, "Escape") != nil {
			return
		}
		end := time.Now().Add(time.Second)
		for time.Now().Before(end) {
			if s, err := g.pane.Capture(ctx); err != nil || Classify(s) != ScreenSurvey {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(g.opts.Poll):
			}
		}
	}
}
