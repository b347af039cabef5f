//! The vault over a real SQLite store: sealing, listing, wrong keys, rotation, grants.

#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt as _;

use super::*;
use crate::secret::{Cookie, Header, StorageItem};

const PASSWORD: &str = "correct horse battery staple";

fn secret(name: &str) -> Secret {
    Secret {
        tenant: "default".into(),
        name: name.into(),
        origins: vec!["HTTPS://App.Example.com:443/login".into()],
        fields: Fields {
            username: Some("alice".into()),
            password: Some(PASSWORD.into()),
            totp: Some("GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ".into()),
            cookies: vec![Cookie {
                name: "sid".into(),
                value: "cookie-value-123".into(),
                domain: "app.example.com".into(),
                path: "/".into(),
                expires: None,
                http_only: true,
                secure: false,
                same_site: None,
            }],
            local_storage: vec![StorageItem {
                origin: "https://app.example.com".into(),
                key: "token".into(),
                value: "storage-token-456".into(),
            }],
            headers: vec![Header {
                name: "X-Api-Key".into(),
                value: "header-key-789".into(),
            }],
        },
    }
}

#[tokio::test]
async fn secrets_round_trip_and_listing_shows_no_value() {
    let vault = Vault::open(
        Store::open_in_memory().await.unwrap(),
        MasterKey::generate().unwrap(),
    )
    .await
    .unwrap();
    vault.set(&secret("app")).await.unwrap();
    let got = vault.get("default", "app").await.unwrap();
    assert_eq!(got.origins, ["https://app.example.com"], "canonical origin");
    assert_eq!(got.fields, secret("app").fields);
    let listed = vault.list("default").await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        listed[0].fields,
        [
            "username",
            "password",
            "totp",
            "cookies",
            "local_storage",
            "headers"
        ]
    );
    let shown = format!("{listed:?} {got:?} {vault:?}");
    for value in got.fields.redacted_values() {
        assert!(!shown.contains(value), "{value} in {shown}");
    }
    assert!(
        vault.list("other").await.unwrap().is_empty(),
        "tenants are apart"
    );
    assert!(matches!(
        vault.get("other", "app").await,
        Err(VaultError::NotFound(_))
    ));
    assert!(vault.remove("default", "app").await.unwrap());
}

#[tokio::test]
async fn bad_input_is_refused_before_anything_is_written() {
    let vault = Vault::open(
        Store::open_in_memory().await.unwrap(),
        MasterKey::generate().unwrap(),
    )
    .await
    .unwrap();
    let mut short = secret("app");
    short.fields.password = Some("12345".into());
    let err = vault.set(&short).await.unwrap_err().to_string();
    assert!(err.contains("shorter than 6"), "{err}");
    assert!(!err.contains("12345"));
    let mut bad_origin = secret("app");
    bad_origin.origins = vec!["file:///etc".into()];
    assert!(vault.set(&bad_origin).await.is_err());
    assert!(vault.set(&secret("bad name")).await.is_err());
    let mut bad_totp = secret("app");
    bad_totp.fields.totp = Some("not base32 at all!".into());
    assert!(vault.set(&bad_totp).await.is_err());
    assert!(vault.list("default").await.unwrap().is_empty());
}

#[tokio::test]
async fn a_record_moved_or_edited_does_not_decrypt_into_another_use() {
    let store = Store::open_in_memory().await.unwrap();
    let vault = Vault::open(store.clone(), MasterKey::generate().unwrap())
        .await
        .unwrap();
    vault.set(&secret("app")).await.unwrap();
    vault.set(&secret("other")).await.unwrap();
    // Ciphertext copied under another name: the associated data no longer matches.
    let mut moved = store.secret("default", "app").await.unwrap().unwrap();
    moved.name = "other".into();
    store.put_secret(&moved).await.unwrap();
    assert!(matches!(
        vault.get("default", "other").await,
        Err(VaultError::Crypto(_))
    ));
    // The plaintext origins column edited to another site: the sealed origins rule.
    let mut edited = store.secret("default", "app").await.unwrap().unwrap();
    edited.origins = vec!["https://evil.example".into()];
    store.put_secret(&edited).await.unwrap();
    assert_eq!(
        vault.get("default", "app").await.unwrap().origins,
        ["https://app.example.com"]
    );
}

#[tokio::test]
async fn the_wrong_key_is_one_clear_error_and_changes_nothing() {
    let store = Store::open_in_memory().await.unwrap();
    let vault = Vault::open(store.clone(), MasterKey::generate().unwrap())
        .await
        .unwrap();
    vault.set(&secret("app")).await.unwrap();
    let before = (
        store.meta("key_check").await.unwrap(),
        store.secrets(None).await.unwrap(),
    );
    let err = Vault::open(store.clone(), MasterKey::generate().unwrap())
        .await
        .unwrap_err();
    assert!(matches!(err, VaultError::WrongKey));
    assert_eq!(
        err.to_string(),
        "the master key does not open this vault; nothing was changed"
    );
    let after = (
        store.meta("key_check").await.unwrap(),
        store.secrets(None).await.unwrap(),
    );
    assert_eq!(before, after);
}

#[tokio::test]
async fn the_key_file_is_created_0600_and_a_readable_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (key, source) = MasterKey::load(&data, None).unwrap();
    let path = data.join(KEY_FILE);
    assert_eq!(source, KeySource::File(path.clone()));
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let (again, _) = MasterKey::load(&data, None).unwrap();
    assert_eq!(key.bytes(), again.bytes(), "the same key on the next run");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = MasterKey::load(&data, None).unwrap_err().to_string();
    assert!(err.contains("readable by other users"), "{err}");
    // The environment wins over the file, and must be 32 bytes of base64.
    let env = MasterKey::generate().unwrap();
    let (from_env, source) = MasterKey::load(&data, Some(&env.to_base64())).unwrap();
    assert_eq!((from_env.bytes(), source), (env.bytes(), KeySource::Env));
    assert!(
        MasterKey::load(&data, Some("c2hvcnQ="))
            .unwrap_err()
            .to_string()
            .contains("32 bytes")
    );
    assert!(!format!("{env:?}").contains(env.to_base64().as_str()));
}

#[tokio::test]
async fn rotation_re_encrypts_every_record_and_only_the_new_key_opens() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_sqlite(&dir.path().join("db")).await.unwrap();
    let (vault, _) = Vault::open_in(store.clone(), dir.path(), None)
        .await
        .unwrap();
    vault.set(&secret("app")).await.unwrap();
    let mut other_tenant = secret("app");
    other_tenant.tenant = "acme".into();
    vault.set(&other_tenant).await.unwrap();
    let old_key = std::fs::read_to_string(dir.path().join(KEY_FILE)).unwrap();
    let old_cipher = store
        .secret("default", "app")
        .await
        .unwrap()
        .unwrap()
        .ciphertext;

    let (vault, moved) = vault.rotate_key_file(dir.path()).await.unwrap();
    assert_eq!(moved, 2);
    assert!(!dir.path().join(NEXT_KEY_FILE).exists());
    let new_key = std::fs::read_to_string(dir.path().join(KEY_FILE)).unwrap();
    assert_ne!(old_key, new_key);
    assert_ne!(
        store
            .secret("default", "app")
            .await
            .unwrap()
            .unwrap()
            .ciphertext,
        old_cipher
    );
    assert_eq!(
        vault.get("acme", "app").await.unwrap().fields,
        secret("app").fields
    );
    let old = MasterKey::from_base64(&old_key).unwrap();
    assert!(matches!(
        Vault::open(store.clone(), old).await,
        Err(VaultError::WrongKey)
    ));
    let (reopened, _) = Vault::open_in(store, dir.path(), None).await.unwrap();
    assert_eq!(
        reopened
            .get("default", "app")
            .await
            .unwrap()
            .fields
            .password
            .as_deref(),
        Some(PASSWORD)
    );
}

#[tokio::test]
async fn a_rotation_cut_off_before_or_after_its_commit_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_sqlite(&dir.path().join("db")).await.unwrap();
    let (vault, _) = Vault::open_in(store.clone(), dir.path(), None)
        .await
        .unwrap();
    vault.set(&secret("app")).await.unwrap();

    // Cut off before the commit: a next-key file exists, the records are untouched.
    let stray = MasterKey::generate().unwrap();
    key::write_key_file(&dir.path().join(NEXT_KEY_FILE), &stray, true).unwrap();
    let (vault, _) = Vault::open_in(store.clone(), dir.path(), None)
        .await
        .unwrap();
    assert!(
        !dir.path().join(NEXT_KEY_FILE).exists(),
        "the unused next key is dropped"
    );
    assert!(vault.get("default", "app").await.is_ok());

    // Cut off after the commit, before the rename: the records are under the next key.
    let next = MasterKey::generate().unwrap();
    key::write_key_file(&dir.path().join(NEXT_KEY_FILE), &next, true).unwrap();
    let _ = vault.rotate(next.clone()).await.unwrap();
    let (vault, source) = Vault::open_in(store.clone(), dir.path(), None)
        .await
        .unwrap();
    assert_eq!(source, KeySource::File(dir.path().join(KEY_FILE)));
    assert!(!dir.path().join(NEXT_KEY_FILE).exists());
    assert_eq!(
        vault
            .get("default", "app")
            .await
            .unwrap()
            .fields
            .password
            .as_deref(),
        Some(PASSWORD)
    );
    let in_file = std::fs::read_to_string(dir.path().join(KEY_FILE)).unwrap();
    assert_eq!(
        MasterKey::from_base64(&in_file).unwrap().bytes(),
        next.bytes()
    );
}

#[tokio::test]
async fn grants_are_single_use_scoped_expiring_and_revocable() {
    use crate::grant::{self, GrantRefusal};
    let store = Store::open_in_memory().await.unwrap();
    let hosts = |h: &[&str]| h.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let ttl = std::time::Duration::from_secs(900);
    let (token, record) = grant::create(&store, "default", &["example.com".into()], ttl, false)
        .await
        .unwrap();
    assert!(token.expose().starts_with("agt_"));
    // A grant for everything is refused, however it is spelt.
    for domains in [
        &["*"][..],
        &["*.*"],
        &["example.*"],
        &["."],
        &["a..b"],
        &["https://x.com"],
        &["x.com:443"],
    ] {
        let domains: Vec<String> = domains.iter().map(|d| (*d).to_owned()).collect();
        assert!(
            grant::create(&store, "default", &domains, ttl, false)
                .await
                .is_err(),
            "{domains:?}"
        );
    }
    assert!(
        grant::create(
            &store,
            "default",
            &["*.example.com".into(), "127.0.0.1".into()],
            ttl,
            false
        )
        .await
        .is_ok()
    );
    assert!(!format!("{token:?} {record:?}").contains(token.expose()));
    // Out of scope: refused, and not used up.
    assert_eq!(
        grant::redeem(&store, "default", token.expose(), &hosts(&["example.org"]))
            .await
            .unwrap(),
        Err(GrantRefusal::OutOfScope("example.org".into()))
    );
    assert_eq!(
        grant::redeem(&store, "acme", token.expose(), &hosts(&["app.example.com"]))
            .await
            .unwrap(),
        Err(GrantRefusal::Unknown),
        "another tenant's token is unknown"
    );
    assert!(
        grant::redeem(
            &store,
            "default",
            token.expose(),
            &hosts(&["app.example.com"])
        )
        .await
        .unwrap()
        .is_ok()
    );
    assert_eq!(
        grant::redeem(
            &store,
            "default",
            token.expose(),
            &hosts(&["app.example.com"])
        )
        .await
        .unwrap(),
        Err(GrantRefusal::Used)
    );
    // Reusable, then revoked.
    let (again, record) = grant::create(&store, "default", &["*.example.com".into()], ttl, true)
        .await
        .unwrap();
    for _ in 0..2 {
        assert!(
            grant::redeem(&store, "default", again.expose(), &hosts(&["example.com"]))
                .await
                .unwrap()
                .is_ok()
        );
    }
    assert!(grant::revoke(&store, "default", &record.id).await.unwrap());
    assert_eq!(
        grant::redeem(&store, "default", again.expose(), &hosts(&["example.com"]))
            .await
            .unwrap(),
        Err(GrantRefusal::Revoked)
    );
    // Expired: a grant whose expiry has passed.
    let (_, mut record) = grant::create(&store, "default", &["example.com".into()], ttl, true)
        .await
        .unwrap();
    record.id = "g_expired".into();
    record.token_hash = grant::hash("agt_expired");
    record.expires_at = 1;
    store.insert_grant(&record).await.unwrap();
    assert_eq!(
        grant::redeem(&store, "default", "agt_expired", &hosts(&["example.com"]))
            .await
            .unwrap(),
        Err(GrantRefusal::Expired)
    );
    assert_eq!(
        grant::redeem(&store, "default", "agt_nope", &hosts(&["example.com"]))
            .await
            .unwrap(),
        Err(GrantRefusal::Unknown)
    );
    assert!(grant::parse_ttl("15m").unwrap().as_secs() == 900);
    assert!(
        grant::parse_ttl("0s").is_err()
            && grant::parse_ttl("31d").is_err()
            && grant::parse_ttl("x").is_err()
    );
}

#[tokio::test]
async fn signing_keys_are_sealed_rotated_and_survive_a_master_key_rotation() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_sqlite(&dir.path().join("db")).await.unwrap();
    let (vault, _) = Vault::open_in(store.clone(), dir.path(), None)
        .await
        .unwrap();
    let keep = std::time::Duration::from_secs(600);
    assert!(vault.identity_signer("acme").await.unwrap().is_none());
    let first = vault.create_identity("acme").await.unwrap();
    assert_eq!(first.kid, crate::webbotauth::thumbprint(&first.public_key));
    // One active key per tenant: a second create is refused, nothing written.
    let again = vault.create_identity("acme").await.unwrap_err();
    assert!(again.to_string().contains("rotate"), "{again}");
    assert_eq!(vault.identity_keys("acme", keep).await.unwrap().len(), 1);
    // The private key is sealed with its tenant and id: a row moved to another
    // tenant does not open.
    let row = &store.identity_keys(Some("acme")).await.unwrap()[0];
    let signer = vault.identity_signer("acme").await.unwrap().unwrap();
    assert_eq!(signer.kid(), first.kid);
    assert_eq!(
        format!("{signer:?}"),
        format!("IdentitySigner({}) [REDACTED]", first.kid)
    );
    let mut moved = row.clone();
    moved.tenant = "other".into();
    store.add_identity_key(&moved, false).await.unwrap();
    assert!(vault.identity_signer("other").await.is_err());
    // Rotation: the new key signs, the old stays listed while its signatures live.
    let second = vault.rotate_identity("acme").await.unwrap();
    assert_ne!(second.kid, first.kid);
    let listed = vault.identity_keys("acme", keep).await.unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].kid, second.kid);
    assert!(listed[0].retired_ms.is_none() && listed[1].retired_ms.is_some());
    assert_eq!(
        vault.identity_signer("acme").await.unwrap().unwrap().kid(),
        second.kid
    );
    assert_eq!(vault.identity_signers("acme", keep).await.unwrap().len(), 2);
    // The master key rotates: both keys are sealed anew and still open.
    let before = store.identity_keys(Some("acme")).await.unwrap();
    // (The moved row would stop the rotation: retired and pruned first.)
    vault.rotate_identity("other").await.unwrap();
    store.prune_identity_keys("other", i64::MAX).await.unwrap();
    let (vault, _) = vault.rotate_key_file(dir.path()).await.unwrap();
    let after = store.identity_keys(Some("acme")).await.unwrap();
    assert_ne!(before[0].ciphertext, after[0].ciphertext);
    assert_eq!(vault.identity_signers("acme", keep).await.unwrap().len(), 2);
    // Once its signatures have expired, a retired key is no longer listed.
    let listed = vault
        .identity_keys("acme", std::time::Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].kid, second.kid);
}
