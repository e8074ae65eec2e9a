package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agyharness/agyharness/cmd/agyharness/internal/termtext"
	"github.com/agyharness/agyharness/messages"
)

// sessionAPI is what the driver needs of an *actors.Session, so the driver
// can be tested against a scripted session.
type sessionAPI interface {
	ID() string
	ConversationID() string
	Events() <-chan *messages.Event
	Do(ctx context.Context, c messages.Command) error
	Detach(ctx context.Context) error
	Err() error
}

// driverConfig says how a driver talks to its user.
type driverConfig struct {
	json        bool // events as JSON lines; stdin lines are JSON commands
	auto        bool // answer every prompt unattended (first option, allow)
	interactive bool // human mode: typed lines are turns and prompt answers
	color       bool

	// turns are sent in order, each once the previous one is idle (sim).
	turns []messages.Command
	// exitAfterTurns detaches once the last of turns is idle.
	exitAfterTurns bool
	// detachOnEOF detaches when stdin ends, once the session is idle.
	detachOnEOF bool
	// noTypedTurns ignores typed lines that answer no prompt (sim runs
	// its own script).
	noTypedTurns bool
	// echoTurns prints the turns the driver sends (sim's human mode:
	// nobody typed them).
	echoTurns bool
	// interruptWindow: a second Ctrl-C within it detaches. Default 2s.
	interruptWindow time.Duration
	// typesTurns: the session types turns into agy's terminal (launch),
	// so a first turn can be sent to an agy without a conversation.
	typesTurns bool
}

// work is one command for the worker; result is its outcome.
type work struct {
	cmd messages.Command
}

type result struct {
	cmd messages.Command
	err error
}

// driver runs one session for one user: events out (rendered or JSON),
// commands in (typed lines, JSON lines, signals, or a script). All of its
// state is owned by the goroutine that runs loop; commands that block (a
// turn, an interrupt) run on its worker goroutine.
type driver struct {
	cfg     driverConfig
	sess    sessionAPI
	out     io.Writer
	in      io.Reader
	signals <-chan os.Signal
	log     *slog.Logger

	enc    *json.Encoder
	render *renderer

	state       string // the last root status state
	turnPending bool   // a turn was sent and has not gone idle yet
	turnSeen    bool   // its user_message arrived
	turnActive  bool   // and agy did something for it (an item after the user_message)
	turnText    string // its text
	nextTurn    int    // index into cfg.turns
	inflight    int    // commands queued or running on the worker
	eof         bool
	detaching   bool
	detachErr   error // the session did not stop when asked: run gives up on it
	lastSigint  time.Time
	errN        int

	prompts []*pendingPrompt // open prompts the person answers in order (human mode)
	handled map[string]bool  // elicitations already queued, answered or withdrawn

	work    chan work
	results chan result
}

func newDriver(cfg driverConfig, sess sessionAPI, out io.Writer, in io.Reader, signals <-chan os.Signal, log *slog.Logger) *driver {
	if cfg.interruptWindow <= 0 {
		cfg.interruptWindow = 2 * time.Second
	}
	d := &driver{
		cfg: cfg, sess: sess, out: out, in: in, signals: signals, log: log,
		handled: make(map[string]bool),
		work:    make(chan work, 64),
		results: make(chan result, 64),
	}
	if cfg.json {
		d.enc = json.NewEncoder(out)
		d.enc.SetEscapeHTML(false)
	} else {
		d.render = newRenderer(out, cfg.color)
		if cfg.noTypedTurns {
			d.render.idleHint = ""
		}
		if cfg.typesTurns {
			d.render.noConversationHint = "the first turn you send is typed into agy"
		}
		if c, ok := sess.(interface{ ModelDisplayName(string) string }); ok {
			d.render.catalogName = c.ModelDisplayName
		}
	}
	return d
}

// run drives the session until it ends (detach, signal, stdin EOF as
// configured, or the session failing). It returns the session's error, if
// it ended on its own with one.
func (d *driver) run(ctx context.Context) error {
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.worker(wctx)
	}()
	defer func() {
		cancel()
		close(d.work)
		wg.Wait()
	}()

	stopInput := make(chan struct{})
	defer close(stopInput)
	var lines <-chan inputLine
	if d.in != nil && (d.cfg.json || d.cfg.interactive || d.cfg.detachOnEOF) {
		lines = readLines(d.in, stopInput)
	}

	if len(d.cfg.turns) > 0 {
		d.sendNextTurn()
	}
	events := d.sess.Events()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return d.sess.Err()
			}
			d.onEvent(ev)
		case in, ok := <-lines:
			switch {
			case !ok:
				lines = nil
				d.eof = true
				d.maybeDetachOnEOF()
			case in.tooLong:
				d.reportError(fmt.Errorf("a line longer than %d bytes was ignored", maxCommandLine))
			default:
				d.onLine(in.text)
			}
		case res := <-d.results:
			d.inflight--
			d.onResult(res)
		case sig := <-d.signals:
			d.onSignal(sig)
		case <-ctx.Done():
			d.detach()
			ctx = context.Background() // Done fires once; keep draining events
		}
		if d.detachErr != nil {
			return d.detachErr
		}
	}
}

// maxCommandLine bounds a stdin line (a command or a typed turn). A longer
// line is discarded as it streams in and reported; the lines after it are
// read as usual.
const maxCommandLine = 1 << 20

// readLine reads one line of at most max bytes, without its "\n" or
// "\r\n". A longer line is read to its end but not kept: tooLong, and line
// is nil. At the end of r it returns a last unterminated line, then io.EOF
// (or the read error).
func readLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(frag) > max+len("\r\n") {
				tooLong, line = true, nil
			} else {
				line = append(line, frag...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !tooLong && len(line) == 0 {
			return nil, false, err
		}
		// A whole line, or the last one (the next call reports the end).
		if tooLong {
			return nil, true, nil
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) > max {
			return nil, true, nil
		}
		return line, false, nil
	}
}

// inputLine is one line of stdin, or the news that one was too long.
type inputLine struct {
	text    string
	tooLong bool
}

// readLines reads lines from r on a goroutine that ends at EOF or on a read
// error (or when stop is closed and a line is pending). A read in progress
// cannot be cancelled: the goroutine lives until r yields, which for a
// process's stdin is at most until exit.
func readLines(r io.Reader, stop <-chan struct{}) <-chan inputLine {
	ch := make(chan inputLine)
	go func() {
		defer close(ch)
		br := bufio.NewReaderSize(r, 64*1024)
		for {
			line, tooLong, err := readLine(br, maxCommandLine)
			if err != nil {
				return
			}
			select {
			case ch <- inputLine{text: string(line), tooLong: tooLong}:
			case <-stop:
				return
			}
		}
	}()
	return ch
}

func (d *driver) worker(ctx context.Context) {
	for w := range d.work {
		err := d.sess.Do(ctx, w.cmd)
		select {
		case d.results <- result{cmd: w.cmd, err: err}:
		case <-ctx.Done():
		}
	}
}

// submit queues a command for the worker without blocking the loop.
func (d *driver) submit(c messages.Command) {
	select {
	case d.work <- work{cmd: c}:
		d.inflight++
	default:
		d.reportError(errors.New("too many commands waiting; this one was dropped"))
	}
}

// ---- events ----

func (d *driver) emit(ev *messages.Event) {
	if d.enc != nil {
		if err := d.enc.Encode(ev); err != nil {
			d.log.Warn("writing an event failed", "err", err)
		}
		return
	}
	d.render.event(ev)
}

func (d *driver) onEvent(ev *messages.Event) {
	d.emit(ev)
	if ev.Type != messages.EventStatus && ev.Type != messages.EventUserMessage && d.turnSeen {
		d.turnActive = true
	}
	switch ev.Type {
	case messages.EventStatus:
		if ev.ParentConversationID == "" {
			d.onStatus(ev.State)
		}
	case messages.EventUserMessage:
		if ev.Origin == messages.OriginHarness && d.turnPending {
			d.turnSeen = true
		}
	case messages.EventConversationRotated:
		// A new conversation: the turn in flight, if any, is not coming back.
		d.turnDone()
	case messages.EventError:
		if ev.Code == messages.ErrorTurnNotTaken && d.turnPending && ev.Text == d.turnText {
			// agy dropped the turn in flight (the error says so): no idle
			// of its own will come.
			d.turnDone()
		}
	case messages.EventElicitationRequest:
		d.onPrompt(ev)
	case messages.EventElicitationResolved:
		d.onPromptClosed(ev)
	}
}

// onStatus closes the turn in flight on idle. agy can report IDLE for a
// moment between recording a turn and starting to run it, so an idle counts
// only once agy did something for the turn (or on error).
func (d *driver) onStatus(state string) {
	d.state = state
	switch {
	case state == messages.StateIdle && d.turnPending && d.turnActive,
		state == messages.StateError && d.turnPending:
		d.turnDone()
	}
	d.maybeDetachOnEOF()
}

// turnDone ends the turn in flight and moves the script on.
func (d *driver) turnDone() {
	if !d.turnPending {
		return
	}
	d.turnPending, d.turnSeen, d.turnActive = false, false, false
	d.turnIdle()
}

// turnIdle moves the script on once a turn has gone idle.
func (d *driver) turnIdle() {
	if d.nextTurn < len(d.cfg.turns) {
		d.sendNextTurn()
		return
	}
	if d.cfg.exitAfterTurns && len(d.cfg.turns) > 0 {
		d.detach()
	}
}

func (d *driver) sendNextTurn() {
	c := d.cfg.turns[d.nextTurn]
	d.nextTurn++
	if d.cfg.echoTurns && d.render != nil {
		d.render.line("%s> %s%s", d.render.p.bold, termtext.Clean(c.Text), d.render.p.reset)
	}
	d.sendTurn(c)
}

func (d *driver) sendTurn(c messages.Command) {
	// Pending before sending: the turn's running edge may arrive before Do returns.
	d.turnPending, d.turnSeen, d.turnActive = true, false, false
	d.turnText = c.Text
	d.submit(c)
}

func (d *driver) onPrompt(ev *messages.Event) {
	if d.handled[ev.ElicitationID] {
		return
	}
	d.handled[ev.ElicitationID] = true
	switch {
	case ev.Kind == messages.KindOther:
		// Nothing to type here: agy's terminal answers it (the renderer said so).
	case d.cfg.auto:
		if r, ok := autoResolve(ev); ok {
			d.submit(messages.Command{Type: messages.CommandResolve, ElicitationID: r.ElicitationID, Action: r.Action, Answers: r.Answers})
		}
	case d.cfg.interactive && d.render != nil:
		d.prompts = append(d.prompts, &pendingPrompt{ev: ev})
		if len(d.prompts) == 1 {
			d.render.ask(d.prompts[0].hint())
		}
	}
}

func (d *driver) onPromptClosed(ev *messages.Event) {
	d.handled[ev.ElicitationID] = true
	for i, p := range d.prompts {
		if p.ev.ElicitationID != ev.ElicitationID {
			continue
		}
		d.prompts = append(d.prompts[:i], d.prompts[i+1:]...)
		if i == 0 && len(d.prompts) > 0 {
			d.render.ask(d.prompts[0].hint())
		}
		break
	}
}

// ---- input ----

func (d *driver) onLine(line string) {
	if d.cfg.json {
		d.onJSONLine(line)
		return
	}
	if !d.cfg.interactive {
		return
	}
	if len(d.prompts) > 0 {
		p := d.prompts[0]
		done, err := p.input(line)
		if err != nil {
			d.render.ask(err.Error() + "; " + p.hint())
			return
		}
		if !done {
			d.render.ask(p.hint())
			return
		}
		d.prompts = d.prompts[1:]
		r := p.resolve()
		d.submit(messages.Command{Type: messages.CommandResolve, ElicitationID: r.ElicitationID, Action: r.Action, Answers: r.Answers})
		if len(d.prompts) > 0 {
			d.render.ask(d.prompts[0].hint())
		}
		return
	}
	text := strings.TrimSpace(line)
	if d.cfg.noTypedTurns && text != "/detach" && text != "/quit" && text != "/exit" {
		return
	}
	switch text {
	case "":
		return
	case "/detach", "/quit", "/exit":
		d.detach()
		return
	case "/interrupt":
		d.submit(messages.Command{Type: messages.CommandInterrupt})
		return
	}
	d.sendTurn(messages.Command{Type: messages.CommandTurn, Text: text})
}

func (d *driver) onJSONLine(line string) {
	if strings.TrimSpace(line) == "" {
		return
	}
	c, err := parseCommand([]byte(line))
	if err != nil {
		d.reportError(err)
		return
	}
	switch c.Type {
	case messages.CommandDetach:
		d.detach()
	case messages.CommandTurn:
		d.sendTurn(c)
	default:
		d.submit(c)
	}
}

func (d *driver) onResult(res result) {
	if res.err == nil {
		if res.cmd.Type == messages.CommandInterrupt && d.turnPending {
			// Interrupt returns once agy is idle: the turn is over.
			d.turnPending, d.turnSeen, d.turnActive = false, false, false
		}
		d.maybeDetachOnEOF()
		return
	}
	if res.cmd.Type == messages.CommandTurn {
		d.turnPending, d.turnSeen, d.turnActive = false, false, false
	}
	d.reportError(fmt.Errorf("%s failed: %w", res.cmd.Type, res.err))
	d.maybeDetachOnEOF()
}

// reportError tells the user about a refused or failed command: an error
// event (seq 0) in JSON mode, a red line otherwise.
func (d *driver) reportError(err error) {
	d.errN++
	ev := cliErrorEvent(d.sess.ID(), d.sess.ConversationID(), d.errN, err)
	d.emit(ev)
}

// maybeDetachOnEOF detaches after stdin ended, once nothing is in flight
// and the session is not running a turn.
func (d *driver) maybeDetachOnEOF() {
	if !d.eof || !d.cfg.detachOnEOF || d.inflight > 0 || d.turnPending {
		return
	}
	if d.state == messages.StateRunning || d.state == messages.StateWaiting {
		return
	}
	d.detach()
}

// ---- signals ----

func (d *driver) onSignal(sig os.Signal) {
	if sig == syscall.SIGTERM {
		d.detach()
		return
	}
	busy := d.state == messages.StateRunning || d.state == messages.StateWaiting || d.turnPending
	now := time.Now()
	if !busy || now.Sub(d.lastSigint) < d.cfg.interruptWindow {
		d.detach()
		return
	}
	d.lastSigint = now
	if d.render != nil {
		d.render.line("%s(interrupting; Ctrl-C again to leave)%s", d.render.p.dim, d.render.p.reset)
	}
	d.submit(messages.Command{Type: messages.CommandInterrupt})
}

// detach stops the session; the loop then drains the last events and ends
// when the event channel closes.
func (d *driver) detach() {
	if d.detaching {
		return
	}
	d.detaching = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.sess.Detach(ctx); err != nil {
		// Waiting on would leave the CLI hanging with nothing to show for it.
		d.detachErr = fmt.Errorf("the session did not stop: %w", err)
	}
}
