//! Serde helpers for the action vocabulary's few fields serde cannot derive: a
//! snapshot ref travels as its printed form (`t1f2e3`), a file's type as one of the
//! kinds this crate makes. Lets a browser worker send these types as they are.

/// A [`NodeRef`](airlock_core::NodeRef) as its printed form.
pub(crate) mod node_ref {
    use airlock_core::NodeRef;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(r: &NodeRef, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(r)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<NodeRef, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// An optional [`NodeRef`](airlock_core::NodeRef) as its printed form.
pub(crate) mod opt_node_ref {
    use airlock_core::NodeRef;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(r: &Option<NodeRef>, s: S) -> Result<S::Ok, S::Error> {
        match r {
            Some(r) => s.collect_str(r),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<NodeRef>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|text| text.parse().map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// A [`Screenshot`](crate::Screenshot) as it arrives: its type is one this crate
/// makes (`image/png`, `image/jpeg`, `application/pdf`), or it is refused.
#[derive(serde::Deserialize)]
pub(crate) struct File {
    #[serde(with = "serde_bytes")]
    data: Vec<u8>,
    mime: String,
    #[serde(default)]
    covered: bool,
}

// By hand: a derived impl would ask `'de: 'static` of the `&'static str` field.
impl<'de> serde::Deserialize<'de> for crate::Screenshot {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let file = File::deserialize(d)?;
        let mime = ["image/png", "image/jpeg", "application/pdf"]
            .into_iter()
            .find(|known| *known == file.mime)
            .ok_or_else(|| {
                serde::de::Error::custom(format!("an unknown file type `{}`", file.mime))
            })?;
        Ok(crate::Screenshot {
            data: file.data,
            mime,
            covered: file.covered,
        })
    }
}
