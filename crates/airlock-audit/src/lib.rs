//! The tamper-evident audit log, pure: how an event becomes canonical bytes, how the
//! log is hashed (an RFC 6962 Merkle tree over the events, and a running chain hash
//! per row), how a checkpoint of (size, root) is signed as a C2SP signed note, and
//! how a log and its checkpoints are verified. The store keeps the rows; the gateway
//! writes them; `airlock audit verify` runs [`verify`].
//!
//! What each part catches: the chain names the first row whose body was edited
//! without the chain being rewritten after it; a checkpoint's root catches any change
//! up to its size, also one that rewrote the chain; checkpoints kept outside the
//! database catch a log cut short after them.

use hex::ToHex as _;
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signer as _, Verifier as _};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

pub mod event;
pub mod merkle;

pub use ed25519_dalek::{SigningKey, VerifyingKey};
pub use event::{
    ApprovalDecided, ApprovalRequested, ApprovalStatus, AuthFailure, Call, CallDone, Change,
    CredentialRefusal, Entry, Event, LoginCheck, LoginGiven, LoginSaved, OperatorStep,
    PolicyChange, Recording, Refusal, SessionChange, Target, TaskEnded, TaskStarted, UnknownStatus,
};
pub use merkle::{Frontier, Hash};

#[cfg(test)]
mod tests;

/// An event's canonical form: JSON with keys sorted at every level and no
/// whitespace (RFC 8785 for the strings and integers Airlock writes), `seq` included,
/// so the bytes hashed do not depend on how a serializer orders fields.
pub fn canonical(seq: u64, fields: &Map<String, Value>) -> String {
    let mut object = fields.clone();
    object.insert("seq".to_owned(), Value::from(seq));
    let mut out = String::new();
    write_canonical(&Value::Object(object), &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(&Value::String((*key).clone()), out);
                out.push(':');
                write_canonical(&map[*key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        // Strings escape `"`, `\` and control characters only; numbers, booleans
        // and null have one form.
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The chain hash of a row: `SHA-256(previous chain ‖ leaf hash)`, the first row's
/// previous chain being 32 zero bytes.
pub fn chain(previous: &Hash, leaf: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update(previous);
    h.update(leaf);
    h.finalize().into()
}

/// One stored row of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Its position, from 1.
    pub seq: u64,
    /// Its canonical JSON ([`canonical`]).
    pub body: String,
    /// Its chain hash ([`chain`]).
    pub chain: Hash,
    /// Copies of body fields a store keeps beside it to filter on (`tenant`,
    /// `session` …), as stored: each must equal the body's field (absent: null), or
    /// an edit outside the hash would move the event in every reader's view.
    pub columns: Vec<(&'static str, Value)>,
}

impl Row {
    /// The row after `previous` (the chain of the row before, zeros for the first).
    pub fn new(seq: u64, fields: &Map<String, Value>, previous: &Hash) -> Row {
        let body = canonical(seq, fields);
        let leaf = merkle::leaf_hash(body.as_bytes());
        Row {
            seq,
            chain: chain(previous, &leaf),
            body,
            columns: Vec::new(),
        }
    }
}

/// A statement that the log had `size` events with tree hash `root`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// Which log (C2SP: a unique, schema-less name).
    pub origin: String,
    /// Events in the log.
    pub size: u64,
    /// The Merkle tree hash of those events.
    pub root: Hash,
}

impl Checkpoint {
    /// The checkpoint's note text (C2SP tlog-checkpoint): origin, size and the
    /// base64 root, one per line.
    pub fn body(&self) -> String {
        format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            STANDARD.encode(self.root)
        )
    }

    /// The checkpoint as a C2SP signed note, signed by `key` under `name`.
    pub fn sign(&self, name: &str, key: &SigningKey) -> String {
        let body = self.body();
        let signature = key.sign(body.as_bytes());
        let mut blob = key_id(name, &key.verifying_key()).to_vec();
        blob.extend_from_slice(&signature.to_bytes());
        format!("{body}\n\u{2014} {name} {}\n", STANDARD.encode(blob))
    }

    /// Reads a signed checkpoint and checks its signature by `name`'s `key`.
    pub fn open(note: &str, name: &str, key: &VerifyingKey) -> Result<Checkpoint, Broken> {
        let bad = |why: &str| Broken::BadCheckpoint {
            why: why.to_owned(),
        };
        let body = open_note(note, name, key)?;
        let mut lines = body.lines();
        let origin = lines.next().unwrap_or_default().to_owned();
        let size = lines
            .next()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad("no tree size"))?;
        let root: Hash = lines
            .next()
            .and_then(|r| STANDARD.decode(r).ok())
            .and_then(|r| r.try_into().ok())
            .ok_or_else(|| bad("no root hash"))?;
        Ok(Checkpoint { origin, size, root })
    }
}

/// The text of a C2SP signed note, if `name`'s `key` signed it.
pub fn open_note(note: &str, name: &str, key: &VerifyingKey) -> Result<String, Broken> {
    let bad = |why: &str| Broken::BadCheckpoint {
        why: why.to_owned(),
    };
    let (body, signatures) = note
        .rsplit_once("\n\n")
        .ok_or_else(|| bad("not a signed note (no blank line before the signatures)"))?;
    let body = format!("{body}\n");
    let id = key_id(name, key);
    let signed = signatures.lines().any(|line| {
        let Some(rest) = line.strip_prefix("\u{2014} ") else {
            return false;
        };
        let Some((signer, blob)) = rest.split_once(' ') else {
            return false;
        };
        let Ok(blob) = STANDARD.decode(blob) else {
            return false;
        };
        signer == name
            && blob.len() == 68
            && blob[..4] == id
            && ed25519_dalek::Signature::from_slice(&blob[4..])
                .is_ok_and(|sig| key.verify(body.as_bytes(), &sig).is_ok())
    });
    if signed {
        Ok(body)
    } else {
        Err(bad("no valid signature by the audit key"))
    }
}

/// The signed notes of a file that holds several, one after another (each ends with
/// its signature lines).
pub fn split_notes(text: &str) -> Vec<String> {
    let mut notes = Vec::new();
    let mut current = String::new();
    let mut signed = false;
    for line in text.split_inclusive('\n') {
        let signature = line.starts_with("\u{2014} ");
        if signed && !signature {
            notes.push(std::mem::take(&mut current));
            signed = false;
        }
        if signature && (signed || current.ends_with("\n\n")) {
            signed = true;
        }
        current.push_str(line);
    }
    if !current.trim().is_empty() {
        notes.push(current);
    }
    notes
}

/// The 4-byte key id C2SP signed notes give an Ed25519 key:
/// `SHA-256(name ‖ "\n" ‖ 0x01 ‖ public key)[..4]`.
pub fn key_id(name: &str, key: &VerifyingKey) -> [u8; 4] {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([b'\n', 0x01]);
    h.update(key.as_bytes());
    let digest = h.finalize();
    [digest[0], digest[1], digest[2], digest[3]]
}

/// A verifier key in the C2SP note format: `name+keyid(hex)+base64(0x01 ‖ key)`.
pub fn verifier_key(name: &str, key: &VerifyingKey) -> String {
    let id: String = key_id(name, key).encode_hex::<String>();
    let mut blob = vec![0x01];
    blob.extend_from_slice(key.as_bytes());
    format!("{name}+{id}+{}", STANDARD.encode(blob))
}

/// Reads a verifier key ([`verifier_key`]): its name and public key.
pub fn parse_verifier_key(text: &str) -> Option<(String, VerifyingKey)> {
    let mut parts = text.trim().splitn(3, '+');
    let (name, id, blob) = (parts.next()?, parts.next()?, parts.next()?);
    let blob = STANDARD.decode(blob).ok()?;
    let (&kind, key) = blob.split_first()?;
    if kind != 0x01 {
        return None;
    }
    let key = VerifyingKey::from_bytes(key.try_into().ok()?).ok()?;
    let want: String = key_id(name, &key).encode_hex::<String>();
    (want == id).then(|| (name.to_owned(), key))
}

/// What is wrong with a log, at the first place it is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Broken {
    /// A row is missing: the one after `seq - 1` is not `seq`.
    Missing {
        /// The first missing position.
        seq: u64,
    },
    /// A row's body says another position than the row's (rows moved).
    Reordered {
        /// The row's position.
        seq: u64,
        /// What its body says.
        says: u64,
    },
    /// A row's body or chain hash does not follow from the rows before it.
    Edited {
        /// The row.
        seq: u64,
    },
    /// A column kept beside a row's body says other than the body (the hashed
    /// truth): it was edited outside the chain.
    ColumnEdited {
        /// The row.
        seq: u64,
        /// Which column.
        column: &'static str,
    },
    /// The log is shorter than a checkpoint says it was.
    Truncated {
        /// Rows now.
        size: u64,
        /// Rows the checkpoint saw.
        checkpoint: u64,
    },
    /// The rows up to a checkpoint do not hash to its root: one was changed and the
    /// chain rewritten after it.
    RootMismatch {
        /// The checkpoint's size.
        checkpoint: u64,
        /// The size of the last checkpoint that still matched (0: none).
        since: u64,
    },
    /// A checkpoint note is unreadable or not signed by the audit key.
    BadCheckpoint {
        /// Why.
        why: String,
    },
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Broken::Missing { seq } => write!(f, "missing: event {seq} is not there"),
            Broken::Reordered { seq, says } => {
                write!(f, "reordered: row {seq} holds event {says}")
            }
            Broken::Edited { seq } => write!(f, "edited: event {seq} is not what was written"),
            Broken::ColumnEdited { seq, column } => write!(
                f,
                "edited: the `{column}` column of event {seq} does not match its hashed body"
            ),
            Broken::Truncated { size, checkpoint } => write!(
                f,
                "truncated: {size} events, but a checkpoint saw {checkpoint}"
            ),
            Broken::RootMismatch { checkpoint, since } => write!(
                f,
                "edited: an event after {since} and up to {checkpoint} changed (the checkpoint at {checkpoint} does not match)"
            ),
            Broken::BadCheckpoint { why } => write!(f, "bad checkpoint: {why}"),
        }
    }
}

/// What a verified log holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Events.
    pub events: u64,
    /// Checkpoints checked against them.
    pub checkpoints: usize,
    /// Events a signed checkpoint covers (the largest checkpoint's size; 0: none,
    /// so nothing but the chain itself vouches for the log).
    pub anchored: u64,
    /// The tree hash of every event.
    pub root: Hash,
}

/// Checks `rows` (in stored order) against themselves and against `checkpoints`
/// (opened and signature-checked already). Returns the first thing wrong.
pub fn verify(rows: &[Row], checkpoints: &[Checkpoint]) -> Result<Verified, Broken> {
    let mut leaves = Vec::with_capacity(rows.len());
    let mut previous = [0u8; 32];
    for (i, row) in rows.iter().enumerate() {
        let position = i as u64 + 1;
        if row.seq != position {
            return Err(if row.seq > position {
                Broken::Missing { seq: position }
            } else {
                Broken::Reordered {
                    seq: position,
                    says: row.seq,
                }
            });
        }
        let body = serde_json::from_str::<Value>(&row.body).unwrap_or(Value::Null);
        let says = body["seq"].as_u64();
        if says != Some(position) {
            return Err(match says {
                Some(says) => Broken::Reordered {
                    seq: position,
                    says,
                },
                None => Broken::Edited { seq: position },
            });
        }
        let leaf = merkle::leaf_hash(row.body.as_bytes());
        let expected = chain(&previous, &leaf);
        if row.chain != expected {
            return Err(Broken::Edited { seq: position });
        }
        for (column, stored) in &row.columns {
            if body.get(*column).unwrap_or(&Value::Null) != stored {
                return Err(Broken::ColumnEdited {
                    seq: position,
                    column,
                });
            }
        }
        previous = row.chain;
        leaves.push(leaf);
    }
    let mut sorted: Vec<&Checkpoint> = checkpoints.iter().collect();
    sorted.sort_by_key(|c| c.size);
    let mut since = 0;
    for checkpoint in sorted {
        if checkpoint.size > leaves.len() as u64 {
            return Err(Broken::Truncated {
                size: leaves.len() as u64,
                checkpoint: checkpoint.size,
            });
        }
        if merkle::root(&leaves[..checkpoint.size as usize]) != checkpoint.root {
            return Err(Broken::RootMismatch {
                checkpoint: checkpoint.size,
                since,
            });
        }
        since = checkpoint.size;
    }
    Ok(Verified {
        events: leaves.len() as u64,
        checkpoints: checkpoints.len(),
        anchored: since,
        root: merkle::root(&leaves),
    })
}
