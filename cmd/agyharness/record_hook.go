package main

import "github.com/agyharness/agyharness/actors"

// setRecorder installs rec as the session's capture hook.
func setRecorder(spec *actors.Spec, rec *recorder) error {
	spec.Recorder = rec.Record
	return nil
}
