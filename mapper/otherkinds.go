package mapper

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// OtherKindHint is what an elicitation_request of kind other says to do:
// the harness does not know agy's answer to it.
const OtherKindHint = "answer it in agy's terminal"

// maxPromptText bounds the texts of agy's an interaction beyond a
// permission or a question carries (its message, its server name, ...).
const maxPromptText = 2048

// interactionOf names the variant of a step's requestedInteraction (its
// only key, or the first in order when agy sent several) and returns its
// raw bytes (the whole requestedInteraction, compacted). "" when the step
// requests nothing or its request is not a JSON object with a key.
func interactionOf(step *wire.Step) (string, []byte) {
	raw := rawInteraction(step)
	if len(raw) == 0 {
		return "", nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || len(m) == 0 {
		return "", nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return keys[0], raw
	}
	return keys[0], b.Bytes()
}

// rawInteraction is the requestedInteraction of a step as agy sent it (from
// Raw), or as encoded from the typed fields for a step built in Go.
func rawInteraction(step *wire.Step) json.RawMessage {
	if len(step.Raw) > 0 {
		var v struct {
			RI json.RawMessage `json:"requestedInteraction"`
		}
		if json.Unmarshal(step.Raw, &v) == nil && len(v.RI) > 0 && !bytes.Equal(v.RI, []byte("null")) {
			return v.RI
		}
		return nil
	}
	if step.RequestedInteraction == nil {
		return nil
	}
	b, err := json.Marshal(step.RequestedInteraction)
	if err != nil {
		return nil
	}
	return b
}

// otherPrompt fills p for a requested interaction that is neither agy's
// permission nor its question: a filePermission (a permission, answered
// with agy's schema's filePermission shape), an MCP elicitation (answered
// with accept, decline or cancel), or anything else (kind other: shown,
// not answerable). false when the step requests nothing readable.
func otherPrompt(step *wire.Step, p *Prompt) bool {
	name, raw := interactionOf(step)
	if name == "" {
		return false
	}
	ri := step.RequestedInteraction
	p.Interaction = name
	e := messages.Event{Type: messages.EventElicitationRequest, Interaction: name}
	if len(raw) <= messages.MaxInteractionRaw {
		e.Raw = json.RawMessage(raw)
	} else {
		e.RawSize = messages.Ptr(len(raw))
	}
	switch {
	case ri.FilePermission != nil && name == "filePermission":
		fp := ri.FilePermission
		p.Kind = messages.KindPermission
		p.FileURI = fp.AbsolutePathURI
		action := "read_file"
		if rowOf(step.Type).kind == messages.ToolEdit {
			action = "write_file"
		}
		path := clipPrompt(strings.TrimPrefix(fp.AbsolutePathURI, "file://"))
		p.Resource = &messages.Resource{Action: action, Target: path}
		e.Resource = p.Resource
		if path != "" {
			e.Locations = []messages.Location{{Path: path}}
		}
		e.Text = clipPrompt(blockReason(fp.BlockReason))
	case ri.Elicitation != nil && name == "elicitation":
		el := ri.Elicitation
		p.Kind = messages.KindElicitation
		d := &messages.MCPElicitation{Server: clipPrompt(el.ServerName), Mode: clipPrompt(el.Mode), Message: clipPrompt(el.Message), URL: clipPrompt(el.URL)}
		if s := strings.TrimSpace(el.RequestedSchemaJSON); s != "" && len(s) <= messages.MaxInteractionRaw && json.Valid([]byte(s)) {
			d.RequestedSchema = json.RawMessage(s)
		}
		e.Elicitation = d
		e.Text = d.Message
	default:
		p.Kind = messages.KindOther
		e.Text = clipPrompt(otherText(step, name))
		e.Message = OtherKindHint
	}
	e.Kind = p.Kind
	p.Request = e
	return true
}

// otherText is what a step asking an unknown interaction is about: agy's
// summary or action of the tool, else the tool's name, else the
// interaction's name.
func otherText(step *wire.Step, name string) string {
	md := step.Metadata
	switch {
	case md.ToolSummary != "":
		return md.ToolSummary
	case md.ToolAction != "":
		return md.ToolAction
	case md.ToolCall != nil && md.ToolCall.Name != "":
		return md.ToolCall.Name
	}
	return name
}

func blockReason(r string) string {
	switch r {
	case "BLOCK_REASON_OUTSIDE_WORKSPACE":
		return "outside the workspace"
	case "BLOCK_REASON_GITIGNORED":
		return "gitignored"
	case "", "BLOCK_REASON_UNSPECIFIED":
		return ""
	}
	return r
}

// clipPrompt bounds a text of agy's to maxPromptText bytes, on a rune
// boundary.
func clipPrompt(s string) string { return clip(s, maxPromptText) }
