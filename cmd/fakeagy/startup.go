package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agyharness/agyharness/agyversion"
	"github.com/agyharness/agyharness/wire"
)

// What fakeagy --tui shows while it starts, and agy's --version. Recorded
// wording (docs/DECISIONS.md, "Starting agy"): the eligibility notice's
// "verifying your account eligibility" (omnigent, agy 1.1.8), the idle and
// running footers (omnigent), the trust dialog (a pane capture of agy in
// kunchenguid/firstmate PR #1473), the survey's question (omnigent), "You
// are not logged into Antigravity" (agy models, shindgew/agy-acp) and the
// eligibility failure (antigravity-cli issues 785 and 991). Never recorded,
// chosen here: the rest of the notice, the survey's rows, the sign-in
// screen's rows.
const (
	eligibilityNotice = "Verifying your account eligibility. Please try again in a few seconds."
	idleFooter        = "? for shortcuts"
	runningFooter     = "esc to cancel"
	surveyQuestion    = "How's the CLI experience so far?"
)

// defaultVersion is what fakeagy --version prints by default: the newest
// agy version the harness models.
const defaultVersion = agyversion.Modeled

// startupOptions are fakeagy's startup flags.
type startupOptions struct {
	delay       time.Duration // the eligibility window after start; 0: none
	trust       bool          // ask whether to trust the workspace first
	surveyAfter int           // show the feedback survey once this many turns are done; negative: never
	signedOut   bool          // agy is not signed in: its sign-in screen, for good
	ineligible  bool          // the account is not eligible: agy's failure screen, for good
	version     string        // what --version prints
}

func addStartupFlags(fs *flag.FlagSet) *startupOptions {
	o := &startupOptions{}
	fs.DurationVar(&o.delay, "startup-delay", time.Second, "with --tui: for this long after start a typed turn is refused with agy's \"Verifying your account eligibility\" notice and lost, as agy does while it checks the account (0: none)")
	fs.BoolVar(&o.trust, "trust-prompt", false, "with --tui: first ask whether to trust the workspace, as a fresh agy does in a folder it has not trusted (Enter answers Yes)")
	fs.IntVar(&o.surveyAfter, "survey-after", -1, "with --tui: show agy's feedback survey once this many turns are done (0: at start; negative: never); Escape dismisses it, and a turn typed while it is up is lost")
	fs.BoolVar(&o.signedOut, "signed-out", false, "with --tui: show agy's sign-in screen instead of its input, as a signed-out agy does")
	fs.BoolVar(&o.ineligible, "ineligible", false, "with --tui: show agy's \"Eligibility check failed\" screen instead of its input")
	version := os.Getenv("FAKEAGY_VERSION")
	if version == "" {
		version = defaultVersion
	}
	fs.StringVar(&o.version, "version-string", version, "what --version prints (default $FAKEAGY_VERSION, else the newest agy version the harness models)")
	return o
}

// startup is what the terminal shows before agy takes turns, and the
// feedback survey. A nil *startup shows none of it. Its state is owned by
// the terminal's goroutine.
type startup struct {
	opts   startupOptions
	dir    string    // the workspace the trust dialog names
	ready  time.Time // when the eligibility check is done
	now    func() time.Time
	trust  bool // the trust dialog is up
	survey bool // the survey is up
	asked  bool // the survey was shown
	// notices are the eligibility notices agy answered typed turns with:
	// shown in the conversation, as agy shows them.
	notices []string
}

func newStartup(opts startupOptions, dir string) *startup {
	return &startup{opts: opts, dir: dir, ready: time.Now().Add(opts.delay), now: time.Now, trust: opts.trust, survey: opts.surveyAfter == 0, asked: opts.surveyAfter == 0}
}

// blocked: a screen that takes the keyboard for good (signed out,
// ineligible).
func (s *startup) blocked() bool { return s != nil && (s.opts.signedOut || s.opts.ineligible) }

// key takes a key while a startup screen or the survey is up, and reports
// whether it did (the key then never reaches the draft or a dialog). Enter
// (not pasted) answers the trust dialog Yes; in the survey a digit or
// Escape closes it and anything else is lost.
func (s *startup) key(k key, pasted bool) bool {
	switch {
	case s == nil:
		return false
	case s.blocked():
		return true
	case s.trust:
		if (k.r == '\r' || k.r == '\n') && !pasted {
			s.trust = false
		}
		return true
	case s.survey:
		if !pasted && (k.r == keyEscape || (k.r >= '1' && k.r <= '3')) {
			s.survey = false
		}
		return true
	}
	return false
}

// refuses reports whether a turn typed now is refused (the eligibility
// check is not done): it is then lost, and agy answers with its notice.
func (s *startup) refuses() bool {
	if s == nil || !s.now().Before(s.ready) {
		return false
	}
	s.notices = append(s.notices, eligibilityNotice)
	return true
}

// observe opens the survey once the conversation has surveyAfter turns and
// is idle.
func (s *startup) observe(status wire.RunStatus, steps []wire.Step) {
	if s == nil || s.asked || s.opts.surveyAfter <= 0 || status == wire.RunRunning {
		return
	}
	turns := 0
	for _, st := range steps {
		if st.Type == wire.StepUserInput {
			turns++
		}
	}
	if turns >= s.opts.surveyAfter {
		s.survey, s.asked = true, true
	}
}

// room is the height left to the normal screen once the startup lines are
// drawn.
func (s *startup) room(height int) int {
	if s == nil || height <= 0 {
		return height
	}
	return max(height-len(s.notices)-1, 1)
}

// draw is the screen as agy shows it: a startup screen in place of the
// normal one, else the normal screen with the eligibility notices in the
// conversation, the footer under the draft, and the survey over it.
func (s *startup) draw(screen string, status wire.RunStatus) string {
	if s == nil {
		return screen
	}
	switch {
	case s.opts.ineligible:
		return strings.Join([]string{
			"⚠ Eligibility Check",
			"",
			"Eligibility check failed: Your current account is not eligible for Antigravity. Verify your account to continue.",
			"https://accounts.google.com/signin/continue",
		}, "\n")
	case s.opts.signedOut:
		return strings.Join([]string{
			"Welcome to Antigravity CLI",
			"",
			"You are not logged into Antigravity.",
			"How would you like to sign in?",
			"> 1. Sign in with Google",
			"  2. Use an API key",
			"",
			"↑/↓ Navigate · enter Confirm",
		}, "\n")
	case s.trust:
		return strings.Join([]string{
			"Accessing workspace: " + s.dir,
			"",
			"Do you trust the contents of this project?",
			"Antigravity CLI requires permission to read, edit, and execute files here.",
			"",
			"> Yes, I trust this folder",
			"  No, exit",
			"",
			"↑/↓ Navigate · enter Confirm",
		}, "\n")
	}
	if len(s.notices) > 0 {
		mark := "\n\n-- " + statusWord(status) + " --"
		if i := strings.LastIndex(screen, mark); i >= 0 {
			var b strings.Builder
			for _, n := range s.notices {
				b.WriteString("\n! " + n)
			}
			screen = screen[:i] + b.String() + screen[i:]
		}
	}
	if s.survey {
		return screen + "\n" + strings.Join([]string{
			"+-- " + surveyQuestion + " ---",
			"| 1. Good   2. Fine   3. Bad",
			"+-- " + runningFooter + " ---",
		}, "\n")
	}
	footer := idleFooter
	if status == wire.RunRunning {
		footer = runningFooter
	}
	return screen + "\n" + footer
}

// printVersion is fakeagy --version: agy prints its bare version.
func printVersion(w interface{ Write([]byte) (int, error) }, o *startupOptions) {
	fmt.Fprintln(w, o.version)
}
