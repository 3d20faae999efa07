//! Answering from a [`Transcript`]: each call must be the next one recorded, and gets its
//! recorded answer. A call that departs from the transcript is noted and answered as a failure
//! of its kind ([`Call::refused`]), never with a guess, and [`Replay::finish`] reports every
//! departure and every recorded call that never came. Time goes on after a departure: a clock
//! call off the recording is answered from the last recorded time plus the sleeps asked since,
//! so a loop that waits for a deadline still ends.

use std::sync::Mutex;

use super::call::{Answer, Call};
use super::record::Transcript;
use super::System;

#[derive(Debug)]
pub struct Replay {
    transcript: Transcript,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The next exchange of the transcript.
    next: usize,
    departures: Vec<String>,
    /// The time as the replay knows it: the last recorded time, plus the sleeps since.
    now: std::time::Duration,
}

impl Replay {
    pub fn new(transcript: Transcript) -> Self {
        Replay {
            transcript,
            state: Mutex::new(State::default()),
        }
    }

    /// `Ok` when every call came as recorded, in order, and none is left over.
    pub fn finish(self) -> Result<(), Vec<String>> {
        let State {
            next,
            mut departures,
            ..
        } = self.state.into_inner().unwrap_or_else(|e| e.into_inner());
        for e in self.transcript.0.iter().skip(next) {
            departures.push(format!("`{}` was recorded but never asked", e.call));
        }
        if departures.is_empty() {
            Ok(())
        } else {
            Err(departures)
        }
    }
}

impl System for Replay {
    fn effect(&self, call: &Call) -> Answer {
        let Ok(mut state) = self.state.lock() else {
            return call.refused("the replay's state is poisoned");
        };
        if let Call::Sleep { duration } = call {
            state.now += *duration;
        }
        let why = match self.transcript.0.get(state.next) {
            Some(e) if e.call == *call => {
                state.next += 1;
                if let Answer::Time(t) = e.answer {
                    state.now = t;
                }
                return e.answer.clone();
            }
            Some(e) => format!(
                "call {}: `{call}` was asked where `{}` was recorded",
                state.next + 1,
                e.call
            ),
            None => format!("`{call}` was asked after the recording ended"),
        };
        state.departures.push(why.clone());
        match call {
            Call::Now => Answer::Time(state.now),
            _ => call.refused(&why),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Fake, Output, Recording};
    use super::*;

    #[test]
    fn a_recorded_run_replays_and_a_departure_is_reported() {
        let fake = Fake::new().answer("dkms status", "mlnx-nfsrdma/24.10: added\n");
        let recording = Recording::new(&fake);
        let sys: &dyn System = &recording;
        let out = sys.run("dkms", &["status"]);
        sys.unmount("/mnt/data".as_ref(), true).unwrap();
        let transcript = Transcript::parse(&recording.transcript().to_lines()).unwrap();
        assert_eq!(transcript.0.len(), 2);

        let replay = Replay::new(transcript.clone());
        let sys: &dyn System = &replay;
        assert_eq!(sys.run("dkms", &["status"]), out);
        sys.unmount("/mnt/data".as_ref(), true).unwrap();
        replay.finish().unwrap();

        let replay = Replay::new(transcript);
        let sys: &dyn System = &replay;
        match sys.run("ofed_info", &["-s"]) {
            Output::Ran {
                code: None, stderr, ..
            } => {
                assert!(
                    stderr.contains("where `run dkms status` was recorded"),
                    "{stderr}"
                )
            }
            other => panic!("{other:?}"),
        }
        let departures = replay.finish().unwrap_err();
        assert_eq!(departures.len(), 3, "{departures:?}");
    }

    #[test]
    fn time_goes_on_after_a_departure() {
        use std::time::Duration;
        let replay = Replay::new(Transcript::default());
        let sys: &dyn System = &replay;
        sys.sleep(Duration::from_secs(2));
        sys.sleep(Duration::from_secs(3));
        assert_eq!(sys.now(), Duration::from_secs(5));
        assert_eq!(replay.finish().unwrap_err().len(), 3);
    }

    #[test]
    fn a_transcript_line_that_is_not_an_exchange_is_named() {
        let e = Transcript::parse(
            "{\"call\":\"now\",\"answer\":{\"time\":{\"secs\":1,\"nanos\":0}}}\nnot json\n",
        )
        .unwrap_err();
        assert!(e.starts_with("line 2:"), "{e}");
    }
}
