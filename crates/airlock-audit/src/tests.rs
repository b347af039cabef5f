//! The log against every way of tampering with it, and checkpoints against the
//! signed-note format's own published example.

use serde_json::json;

use super::*;

fn fields(n: u64) -> Map<String, Value> {
    let Value::Object(map) = json!({
        "kind": "tool_call",
        "tool": "browser_click",
        "target": {"role": "button", "name": format!("Item {n}")},
        "duration_ms": n * 3,
    }) else {
        unreachable!()
    };
    map
}

fn log(n: u64) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut previous = [0u8; 32];
    for seq in 1..=n {
        let row = Row::new(seq, &fields(seq), &previous);
        previous = row.chain;
        rows.push(row);
    }
    rows
}

fn checkpoint(rows: &[Row], size: usize) -> Checkpoint {
    let leaves: Vec<Hash> = rows[..size]
        .iter()
        .map(|r| merkle::leaf_hash(r.body.as_bytes()))
        .collect();
    Checkpoint {
        origin: "airlock.test/audit".to_owned(),
        size: size as u64,
        root: merkle::root(&leaves),
    }
}

// Rewrites every chain hash from `from` on, as someone with write access would.
fn rechain(rows: &mut [Row], from: usize) {
    let mut previous = if from == 0 {
        [0u8; 32]
    } else {
        rows[from - 1].chain
    };
    for row in &mut rows[from..] {
        row.chain = chain(&previous, &merkle::leaf_hash(row.body.as_bytes()));
        previous = row.chain;
    }
}

#[test]
fn canonical_json_does_not_depend_on_field_order() {
    let a = json!({"b": 1, "a": {"d": [1, "x"], "c": null}, "e": "ü\n\"q\""});
    let b = json!({"e": "ü\n\"q\"", "a": {"c": null, "d": [1, "x"]}, "b": 1});
    let (Value::Object(a), Value::Object(b)) = (a, b) else {
        unreachable!()
    };
    assert_eq!(canonical(7, &a), canonical(7, &b));
    assert_eq!(
        canonical(7, &a),
        r#"{"a":{"c":null,"d":[1,"x"]},"b":1,"e":"ü\n\"q\"","seq":7}"#
    );
}

#[test]
fn an_untouched_log_verifies_with_its_checkpoints() {
    let rows = log(20);
    let checkpoints = [checkpoint(&rows, 8), checkpoint(&rows, 16)];
    let verified = verify(&rows, &checkpoints).unwrap();
    assert_eq!(verified.events, 20);
    assert_eq!(verified.checkpoints, 2);
    assert_eq!(verify(&[], &[]).unwrap().events, 0);
}

#[test]
fn every_kind_of_tampering_is_named_at_its_first_place() {
    let rows = log(20);
    let checkpoints = [checkpoint(&rows, 8), checkpoint(&rows, 16)];

    // An edited body, chain left alone: the chain names the row.
    let mut edited = rows.clone();
    edited[4].body = edited[4].body.replace("Item 5", "Item 6");
    assert_eq!(
        verify(&edited, &checkpoints),
        Err(Broken::Edited { seq: 5 })
    );
    // ... and with the chain rewritten after it: the first checkpoint past it.
    rechain(&mut edited, 4);
    assert_eq!(
        verify(&edited, &checkpoints),
        Err(Broken::RootMismatch {
            checkpoint: 8,
            since: 0
        })
    );
    let mut late = rows.clone();
    late[11].body = late[11].body.replace("Item 12", "Item 13");
    rechain(&mut late, 11);
    assert_eq!(
        verify(&late, &checkpoints),
        Err(Broken::RootMismatch {
            checkpoint: 16,
            since: 8
        })
    );

    // A deleted row.
    let mut deleted = rows.clone();
    deleted.remove(9);
    assert_eq!(
        verify(&deleted, &checkpoints),
        Err(Broken::Missing { seq: 10 })
    );
    // Two rows swapped, positions renumbered to hide it.
    let mut swapped = rows.clone();
    swapped.swap(2, 3);
    swapped[2].seq = 3;
    swapped[3].seq = 4;
    assert_eq!(
        verify(&swapped, &checkpoints),
        Err(Broken::Reordered { seq: 3, says: 4 })
    );
    // The tail cut after a checkpoint.
    let cut = &rows[..12];
    assert_eq!(
        verify(cut, &checkpoints),
        Err(Broken::Truncated {
            size: 12,
            checkpoint: 16
        })
    );
    // Cut before any checkpoint saw it, nothing can tell: the last checkpoint bounds
    // what is protected.
    assert!(verify(&rows[..17], &checkpoints).is_ok());
}

#[test]
fn checkpoints_are_signed_notes_only_the_audit_key_opens() {
    let key = SigningKey::from_bytes(&[7u8; 32]);
    let rows = log(5);
    let cp = checkpoint(&rows, 5);
    let note = cp.sign("airlock.test/audit", &key);
    assert!(note.starts_with("airlock.test/audit\n5\n"), "{note}");
    assert!(note.contains("\n\n\u{2014} airlock.test/audit "), "{note}");
    assert_eq!(
        Checkpoint::open(&note, "airlock.test/audit", &key.verifying_key()),
        Ok(cp.clone())
    );
    // Another size under the same signature, another key, another name: refused.
    let forged = note.replacen("\n5\n", "\n4\n", 1);
    assert!(Checkpoint::open(&forged, "airlock.test/audit", &key.verifying_key()).is_err());
    let other = SigningKey::from_bytes(&[8u8; 32]).verifying_key();
    assert!(Checkpoint::open(&note, "airlock.test/audit", &other).is_err());
    assert!(Checkpoint::open(&note, "someone.else", &key.verifying_key()).is_err());

    let vkey = verifier_key("airlock.test/audit", &key.verifying_key());
    assert_eq!(
        parse_verifier_key(&vkey),
        Some(("airlock.test/audit".to_owned(), key.verifying_key()))
    );
    assert_eq!(parse_verifier_key(&vkey.replacen('+', "+0", 1)), None);
}

#[test]
fn a_file_of_checkpoints_splits_into_its_notes() {
    let key = SigningKey::from_bytes(&[7u8; 32]);
    let rows = log(6);
    let notes: Vec<String> = [2, 4, 6]
        .iter()
        .map(|&n| checkpoint(&rows, n).sign("airlock.test/audit", &key))
        .collect();
    let file = notes.concat();
    assert_eq!(split_notes(&file), notes);
    let opened: Vec<u64> = split_notes(&file)
        .iter()
        .map(|n| {
            Checkpoint::open(n, "airlock.test/audit", &key.verifying_key())
                .unwrap()
                .size
        })
        .collect();
    assert_eq!(opened, [2, 4, 6]);
    assert!(split_notes("").is_empty());
}

#[test]
fn a_note_signed_by_another_implementation_opens() {
    // The example key and note of the signed-note format's reference implementation
    // (golang.org/x/mod/sumdb/note), verified here by ours.
    let (name, key) =
        parse_verifier_key("PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW")
            .expect("the published verifier key parses, and its key id matches ours");
    let note = "If you think cryptography is the answer to your problem,\n\
                then you don't know what your problem is.\n\
                \n\
                \u{2014} PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";
    let body = open_note(note, &name, &key).unwrap();
    assert!(body.starts_with("If you think"), "{body}");
    let tampered = note.replace("answer", "question");
    assert!(open_note(&tampered, &name, &key).is_err());
}
