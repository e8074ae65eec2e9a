package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/mapper"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
)

func replayCommand() *command {
	c := &command{
		name:     "replay",
		synopsis: "replay FILE [--json] [--session-id ID]",
		summary:  "run a capture recorded with --record through the mapper and print the events",
		example: `agyharness attach --port 41237 --record session.capture.jsonl
agyharness replay session.capture.jsonl --json > events.jsonl
agyharness replay - < session.capture.jsonl`,
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		fs := newFlagSet(e, c)
		jsonOut := fs.Bool("json", false, "events as JSON lines (as attach --json prints them)")
		sessionID := fs.String("session-id", "replay", "session_id stamped on the events")
		pos, err := parseFlags(fs, args)
		if err != nil {
			return err
		}
		if len(pos) != 1 {
			return usagef("replay: want exactly one FILE (or - for stdin)")
		}
		var in io.Reader = e.stdin
		if pos[0] != "-" {
			f, err := os.Open(pos[0])
			if err != nil {
				return fmt.Errorf("replay: %w", err)
			}
			defer f.Close()
			in = f
		}
		var emit func(*messages.Event)
		if *jsonOut {
			enc := json.NewEncoder(e.stdout)
			enc.SetEscapeHTML(false)
			emit = func(ev *messages.Event) { _ = enc.Encode(ev) }
		} else {
			r := newRenderer(e.stdout, e.stdoutTTY && e.getenv("NO_COLOR") == "")
			emit = r.event
			defer r.endLine()
		}
		return replayCapture(in, *sessionID, emit)
	}
	return c
}

// replayCapture feeds every record of a capture to a replayer.
func replayCapture(in io.Reader, sessionID string, emit func(*messages.Event)) error {
	p := newReplayer(sessionID, emit)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	n := 0
	for sc.Scan() {
		n++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec captureRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return fmt.Errorf("replay: line %d: %w", n, err)
		}
		if err := p.apply(rec); err != nil {
			return fmt.Errorf("replay: line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	if n == 0 {
		return errors.New("replay: the capture is empty")
	}
	return nil
}

// replayer does what a session does with what it receives, minus the I/O:
// one reconciler per conversation (the bound root, and the subagent
// children the root's steps spawn), fed in the recorded order.
type replayer struct {
	sessionID string
	emit      func(*messages.Event)
	seq       uint64
	root      string
	recs      map[string]*mapper.Reconciler
	models    map[string]wire.ModelInfo
	header    bool
	unbound   []string // turns the session typed before agy had a conversation
	noConv    bool     // the session's no_conversation status was published
	paneOwned bool     // the session owned agy's pane (a bind record says so)
}

func newReplayer(sessionID string, emit func(*messages.Event)) *replayer {
	return &replayer{sessionID: sessionID, emit: emit, recs: make(map[string]*mapper.Reconciler)}
}

func (p *replayer) publish(evs ...messages.Event) {
	for i := range evs {
		ev := evs[i]
		p.seq++
		ev.Seq = p.seq
		ev.SessionID = p.sessionID
		p.emit(&ev)
	}
}

// bind makes conv the root; live: every step of it happened while the
// session watched (a bind record says so).
func (p *replayer) bind(conv string, t messages.Event, live bool) {
	if conv == "" && p.root == "" && !p.noConv {
		// The session found agy without a conversation.
		p.noConv = true
		p.publish(*actors.NoConversationEvent(t.Time))
		return
	}
	if conv == "" || conv == p.root {
		return
	}
	if p.root != "" {
		t.Type, t.ID, t.ConversationID, t.From, t.To = messages.EventConversationRotated, p.root+"/rotated/"+conv, conv, p.root, conv
		p.publish(t)
	}
	p.root = conv
	p.recs[conv] = mapper.NewReconciler(mapper.Config{ConversationID: conv, Models: p.models, PaneOwned: p.paneOwned, Live: live})
	for _, text := range p.unbound {
		p.recs[conv].ExpectTurn(text) // typed into a fresh agy before it had a conversation
	}
	p.unbound = nil
}

func (p *replayer) apply(rec captureRecord) error {
	if rec.Kind != "capture" && !p.header {
		return errors.New("not a capture: the first line must be a capture header")
	}
	stamp := messages.Event{Time: rec.Time}
	switch rec.Kind {
	case "capture":
		if rec.Version > captureVersion {
			return fmt.Errorf("capture version %d is newer than this agyharness reads (%d)", rec.Version, captureVersion)
		}
		p.header = true
	case "bind":
		var b struct {
			PaneOwned bool `json:"pane_owned"`
			Live      bool `json:"live"`
		}
		if len(rec.Payload) > 0 {
			_ = json.Unmarshal(rec.Payload, &b) // an older capture's bind has none
		}
		p.paneOwned = b.PaneOwned
		p.bind(rec.ConversationID, stamp, b.Live)
	case "models":
		var models map[string]wire.ModelInfo
		if err := json.Unmarshal(rec.Payload, &models); err != nil {
			return fmt.Errorf("models: %w", err)
		}
		p.models = models
		for _, r := range p.recs {
			r.SetModels(models)
		}
	case "frame":
		var f rpc.StreamFrame
		if err := json.Unmarshal(rec.Payload, &f); err != nil {
			return fmt.Errorf("frame: %w", err)
		}
		if p.root == "" {
			p.bind(firstNonEmpty(f.Update.ConversationID, rec.ConversationID), stamp, false)
		}
		if c := f.Update.ConversationID; c != "" && c != p.root {
			return nil // the session ignores frames of other conversations too
		}
		p.applyTo(p.root, mapper.FromFrame(&f, rec.Time))
	case "snapshot":
		var snap actors.SnapshotCapture
		if err := json.Unmarshal(rec.Payload, &snap); err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		steps := make([]wire.Step, len(snap.Steps))
		for i, raw := range snap.Steps {
			if err := json.Unmarshal(raw, &steps[i]); err != nil {
				return fmt.Errorf("snapshot step %d: %w", i, err)
			}
		}
		conv := firstNonEmpty(rec.ConversationID, p.root)
		if p.root == "" {
			p.bind(conv, stamp, false)
		}
		p.applyTo(conv, snap.Observation(steps, rec.Time))
	case "turn":
		var turn struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(rec.Payload, &turn); err != nil {
			return fmt.Errorf("turn: %w", err)
		}
		if r := p.recs[p.root]; r != nil {
			r.ExpectTurn(turn.Text)
		} else {
			p.unbound = append(p.unbound, turn.Text)
		}
	case "delivering":
		var res resolvedPayload
		if err := json.Unmarshal(rec.Payload, &res); err != nil {
			return fmt.Errorf("delivering: %w", err)
		}
		for _, r := range p.recs {
			if _, ok := r.Prompt(res.ElicitationID); ok {
				r.AnswerInFlight(res.ElicitationID, res.Action)
				r.ChoiceInFlight(res.ElicitationID, res.Choice)
				break
			}
		}
	case "resolved":
		var res resolvedPayload
		if err := json.Unmarshal(rec.Payload, &res); err != nil {
			return fmt.Errorf("resolved: %w", err)
		}
		for _, r := range p.recs {
			if _, ok := r.Prompt(res.ElicitationID); ok {
				if ev, ok := r.MarkResolved(res.ElicitationID, res.Action, res.StepIndex, rec.Time); ok {
					p.publish(ev)
				}
				break
			}
		}
	default:
		// A newer recorder may write kinds this version does not know;
		// skipping them keeps old replayers useful.
	}
	return nil
}

// applyTo feeds an observation to conv's reconciler, then mirrors any
// subagent children the root has spawned.
func (p *replayer) applyTo(conv string, obs mapper.Observation) {
	r := p.recs[conv]
	if r == nil {
		return
	}
	p.publish(r.Apply(obs)...)
	if conv != p.root {
		return
	}
	for _, c := range r.Children() {
		if _, ok := p.recs[c.ConversationID]; !ok {
			p.recs[c.ConversationID] = mapper.NewReconciler(mapper.Config{
				ConversationID: c.ConversationID, ParentConversationID: p.root, Models: p.models,
				Live: r.Watched(c.ParentStepIndex),
			})
		}
	}
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
