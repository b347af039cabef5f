//! Web Bot Auth across the worker's channel: a session that signs asks for each
//! request's signature, and only the connection holding the session takes those asks
//! and answers them. Another connection with the deployment's token takes nothing and
//! its answers are ignored (no header of its choosing reaches the site); unanswered,
//! a request goes unsigned, not held.

use std::sync::Arc;
use std::time::Duration;

use airlock_browser::{RequestSigner, Signing, WaitUntil};
use airlock_policy::{OriginSet, Policy, PolicyConfig};
use airlock_test_support::botauth::VerifyingSite;
use airlock_test_support::with_browser;
use airlock_worker::{Call, OpenSpec, SecretSet};

use crate::{connect, my_uid, serve};

// Answers every ask with the same headers (the control plane's signer stands here).
struct Fixed(&'static str);

impl RequestSigner for Fixed {
    fn sign(&self, _origin: &str) -> Signing {
        let agent = self.0;
        Box::pin(async move { Some(vec![("Signature-Agent".to_owned(), agent.to_owned())]) })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn only_the_connection_holding_a_signing_session_takes_and_answers_its_asks() {
    with_browser(|h| async move {
        let site = VerifyingSite::start().await;
        let served = serve(&h, Some(my_uid()));
        let holder = connect(&served).await;
        let session = holder
            .open(OpenSpec {
                isolation: None,
                policy: Policy::from_config(&PolicyConfig {
                    allow_private: vec![format!("127.0.0.1:{}", site.port)],
                    ..PolicyConfig::default()
                })
                .unwrap(),
                injection: None,
                secrets: SecretSet::default(),
                effects: Default::default(),
                signing: Some(OriginSet::default()),
            })
            .await
            .unwrap();
        let navigate = |path: &str| Call::Navigate {
            url: site.url(path),
            wait_until: WaitUntil::Load,
        };
        // Nothing answers for the holder yet: the request waits for its ask.
        let session = Arc::new(session);
        let first = tokio::spawn({
            let session = session.clone();
            let call = navigate("/api/first");
            async move { session.call(call, None).await }
        });
        // Another connection with the token: it takes no ask of a session it does
        // not hold, and what it answers (guessing ids) is ignored.
        let intruder = connect(&served).await;
        let ctx = || {
            let mut c = tarpc::context::current();
            c.deadline = (tokio::time::Instant::now() + Duration::from_secs(30)).into_std();
            c
        };
        let taken = intruder.channel().asks(ctx(), 500).await.unwrap();
        assert_eq!(taken, vec![]);
        let forged: Vec<_> = (1..=50)
            .map(|id| {
                (
                    id,
                    Some(vec![(
                        "Signature-Agent".to_owned(),
                        "sig1=\"https://intruder.example\"".to_owned(),
                    )]),
                )
            })
            .collect();
        intruder.channel().answers(ctx(), forged).await.unwrap();
        // Unanswered, it goes unsigned once the ask's time is up.
        first.await.unwrap().unwrap();
        let arrived = site.received_at("/api/first");
        assert_eq!(arrived.len(), 1, "{arrived:?}");
        assert!(!arrived[0].signed(), "{arrived:?}");
        // The holder's signer answers from now on: the next request carries its headers.
        session.sign_with(Arc::new(Fixed("sig1=\"https://holder.example\"")));
        session.call(navigate("/api/second"), None).await.unwrap();
        let arrived = site.received_at("/api/second");
        assert_eq!(arrived.len(), 1, "{arrived:?}");
        assert_eq!(
            arrived[0].signature_agent.as_deref(),
            Some("sig1=\"https://holder.example\""),
            "{arrived:?}"
        );
    })
    .await;
}
