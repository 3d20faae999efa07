//! Keeping what a system was asked and what it answered: [`Recording`] wraps any system and
//! keeps every exchange in a [`Transcript`], which [`Replay`](super::Replay) hands back.
//! A transcript is written as JSON lines, one exchange each.

use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::call::{Answer, Call};
use super::System;

/// One call and its answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exchange {
    pub call: Call,
    pub answer: Answer,
}

/// The exchanges of a run, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transcript(pub Vec<Exchange>);

impl Transcript {
    /// One JSON object per line.
    pub fn to_lines(&self) -> String {
        let mut text = String::new();
        for e in &self.0 {
            // An exchange is plain data: it always serializes.
            if let Ok(line) = serde_json::to_string(e) {
                text.push_str(&line);
                text.push('\n');
            }
        }
        text
    }

    /// Reads [`Transcript::to_lines`]; an error names the line.
    pub fn parse(text: &str) -> Result<Self, String> {
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("line {}: {e}", i + 1)))
            .collect::<Result<_, _>>()
            .map(Transcript)
    }
}

/// Passes every call to `inner` and keeps the exchange.
pub struct Recording<'a> {
    inner: &'a dyn System,
    kept: Mutex<Vec<Exchange>>,
}

impl std::fmt::Debug for Recording<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recording").finish_non_exhaustive()
    }
}

impl<'a> Recording<'a> {
    pub fn new(inner: &'a dyn System) -> Self {
        Recording {
            inner,
            kept: Mutex::new(Vec::new()),
        }
    }

    /// What was asked and answered so far.
    pub fn transcript(&self) -> Transcript {
        Transcript(self.kept.lock().map(|k| k.clone()).unwrap_or_default())
    }
}

impl System for Recording<'_> {
    fn effect(&self, call: &Call) -> Answer {
        let answer = self.inner.effect(call);
        if let Ok(mut kept) = self.kept.lock() {
            kept.push(Exchange {
                call: call.clone(),
                answer: answer.clone(),
            });
        }
        answer
    }
}
