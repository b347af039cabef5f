//! Where workers that register themselves may be (`[registration] allow_addresses`):
//! a registration is the word of whoever holds the worker token, so the address it
//! names is judged before any replica dials it.

use crate::Error;

/// Where registered workers may be: `[registration] allow_addresses`, and never a
/// link-local or cloud metadata address.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkerNetworks(pub Vec<airlock_policy::Cidr>);

impl WorkerNetworks {
    /// Whether a worker that registered itself may be reached at `ip`, or why not.
    /// A registration is anyone's words who holds the worker token: it must not
    /// turn every replica into a client of the cloud's metadata service, of a
    /// link-local neighbour, or of the replica's own loopback (unless listed).
    pub fn admits(&self, ip: std::net::IpAddr) -> Result<(), String> {
        use airlock_policy::AddressClass as C;
        let class = airlock_policy::classify(ip).map(|(class, _)| class);
        if let Some(
            c @ (C::LinkLocal | C::CloudMetadata | C::Unspecified | C::Multicast | C::Broadcast),
        ) = class
        {
            return Err(format!("{ip} is {c}: never a worker's address"));
        }
        if self.0.is_empty() {
            if class == Some(C::Loopback) {
                return Err(format!(
                    "{ip} is loopback: list it in [registration] allow_addresses to allow it"
                ));
            }
            return Ok(());
        }
        if self.0.iter().any(|net| net.contains(ip)) {
            Ok(())
        } else {
            Err(format!("{ip} is not in [registration] allow_addresses"))
        }
    }
}

/// `[registration] allow_addresses`: networks registered workers may be in. A
/// link-local or cloud-metadata network is refused here: no worker lives there.
pub(crate) fn networks(entries: &[String]) -> Result<Vec<airlock_policy::Cidr>, Error> {
    entries
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let invalid = |message: String| Error::Invalid {
                key: format!("registration.allow_addresses[{i}]"),
                message,
            };
            let net: airlock_policy::Cidr = entry.trim().parse().map_err(invalid)?;
            for probe in ["169.254.169.254", "169.254.0.1", "fe80::1"] {
                if let Ok(ip) = probe.parse()
                    && net.contains(ip)
                {
                    return Err(invalid(format!(
                        "`{entry}` holds {probe}, a link-local or cloud metadata address: never a worker's"
                    )));
                }
            }
            Ok(net)
        })
        .collect()
}
