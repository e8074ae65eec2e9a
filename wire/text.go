package wire

import (
	"bytes"
	"errors"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agyharness/agyharness/internal/textcache"
)

// The planner's text fields, each a slot of the stream's textcache.Cache.
const (
	slotThinking = iota
	slotModifiedResponse
	slotResponse
	plannerTexts = textcache.Slots
)

// textSpan is where a planner text's JSON string lies in a frame's payload:
// payload[off:end]. The zero span is no text.
type textSpan struct{ off, end int64 }

// streamOptions are the options a stream decodes its frames with:
// Unmarshal's, with each planner text that is a JSON string left undecoded
// (PlannerResponse.raw, its place in the payload) for the stream's text
// cache to decode after the frame (StreamDecoder.Decode). They are one set
// for every stream, so that json v2's cache of which unmarshaler serves
// which type is one warm cache, not one per stream.
var streamOptions = jsonv2.JoinOptions(decodeOptions, jsonv2.WithUnmarshalers(jsonv2.JoinUnmarshalers(
	keepRawStep,
	jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, p *PlannerResponse) error {
		var raw [plannerTexts]textSpan
		if p.raw != nil {
			raw = *p.raw // a repeated member: merged into what came before
		}
		w := plannerWire{
			Thinking:         rawText{p.Thinking, raw[slotThinking]},
			ModifiedResponse: rawText{p.ModifiedResponse, raw[slotModifiedResponse]},
			Response:         rawText{p.Response, raw[slotResponse]},
			MessageID:        p.MessageID,
			StopReason:       p.StopReason,
			ToolCalls:        p.ToolCalls,
		}
		if err := jsonv2.UnmarshalDecode(dec, &w); err != nil {
			return err
		}
		*p = PlannerResponse{
			Thinking:         w.Thinking.s,
			ModifiedResponse: w.ModifiedResponse.s,
			Response:         w.Response.s,
			MessageID:        w.MessageID,
			StopReason:       w.StopReason,
			ToolCalls:        w.ToolCalls,
		}
		if w.Thinking.raw != (textSpan{}) || w.ModifiedResponse.raw != (textSpan{}) || w.Response.raw != (textSpan{}) {
			p.raw = &[plannerTexts]textSpan{w.Thinking.raw, w.ModifiedResponse.raw, w.Response.raw}
		}
		return nil
	}),
	jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, t *rawText) error {
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		if v[0] == '"' {
			end := dec.InputOffset()
			t.s, t.raw = "", textSpan{end - int64(len(v)), end}
			return nil
		}
		// null (which leaves the text as it is) or not a string: as a plain
		// decode does.
		return placeError(dec, v, jsonv2.Unmarshal(v, &t.s, decodeOptions))
	}),
)))

// plannerWire is PlannerResponse as a stream decodes it: the same members
// (TestPlannerWireMatchesPlannerResponse), the texts left undecoded.
type plannerWire struct {
	Thinking         rawText    `json:"thinking,omitempty"`
	ModifiedResponse rawText    `json:"modifiedResponse,omitempty"`
	Response         rawText    `json:"response,omitempty"`
	MessageID        string     `json:"messageId,omitempty"`
	StopReason       string     `json:"stopReason,omitempty"`
	ToolCalls        []ToolCall `json:"toolCalls,omitempty"`
}

// rawText is a planner text being decoded: the JSON string at raw in the
// payload, not yet decoded, or (raw zero) the text s.
type rawText struct {
	s   string
	raw textSpan
}

// resolveTexts decodes the planner texts a frame's steps left undecoded,
// through c, in the order of the steps (the last value of a field in the
// frame is the one remembered). payload is the frame's.
func resolveTexts(c *textcache.Cache, steps []Step, payload []byte) error {
	for i := range steps {
		p := steps[i].PlannerResponse
		if p == nil || p.raw == nil {
			continue
		}
		fields := [plannerTexts]*string{&p.Thinking, &p.ModifiedResponse, &p.Response}
		for slot, span := range p.raw {
			if span == (textSpan{}) {
				continue
			}
			if span.off < 0 || span.end > int64(len(payload)) || span.end-span.off < 2 || payload[span.off] != '"' {
				return errors.New("wire: a planner text is not where the decoder said") // cannot happen with jsonv2.Unmarshal
			}
			*fields[slot] = c.Decode(slot, payload[span.off:span.end])
		}
		p.raw = nil
	}
	return nil
}

// A StreamDecoder decodes the frames of one StreamAgentStateUpdates stream,
// in order, as Unmarshal does, with the planner's texts through a
// textcache.Cache: a text that extends the one the last frame carried is not
// decoded again. The cache is emptied on an idle frame, so that an idle
// stream holds no text. The zero StreamDecoder is ready; it is for one
// goroutine.
type StreamDecoder struct {
	texts textcache.Cache
}

// Decode decodes payload, the next frame of the stream, into v. steps and
// status point into v: where it holds the frame's steps and the cascade's
// run status. A blank payload leaves v as it is. As with Unmarshal, each
// step's Raw is a slice of payload.
func (d *StreamDecoder) Decode(payload []byte, v any, steps *[]Step, status *RunStatus) error {
	if len(bytes.TrimSpace(payload)) > 0 {
		if err := jsonv2.Unmarshal(payload, v, streamOptions); err != nil {
			return err
		}
	}
	if err := resolveTexts(&d.texts, *steps, payload); err != nil {
		d.texts.Reset()
		return err
	}
	if *status == RunIdle {
		d.texts.Reset()
	} else {
		d.texts.Commit()
	}
	return nil
}
