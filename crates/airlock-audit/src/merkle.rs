//! The RFC 6962 (Certificate Transparency) Merkle tree hash over the log's events:
//! leaves are `SHA-256(0x00 ‖ event)`, inner nodes `SHA-256(0x01 ‖ left ‖ right)`,
//! and a tree of `n` leaves splits at the largest power of two below `n`. The same
//! tree standard transparency-log tooling computes, so its inclusion proofs are
//! theirs too.

use sha2::{Digest, Sha256};

/// A SHA-256 hash.
pub type Hash = [u8; 32];

/// The hash of one leaf (an event's canonical bytes).
pub fn leaf_hash(data: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(data);
    h.finalize().into()
}

/// The hash of an inner node.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The tree hash of `leaves` (leaf hashes, in order); the empty tree's is
/// `SHA-256("")`.
pub fn root(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => Sha256::digest([]).into(),
        1 => leaves[0],
        n => {
            let k = split(n);
            node_hash(&root(&leaves[..k]), &root(&leaves[k..]))
        }
    }
}

// The largest power of two below `n` (n > 1).
fn split(n: usize) -> usize {
    let mut k = 1;
    while k << 1 < n {
        k <<= 1;
    }
    k
}

/// The tree grown one leaf at a time: the roots of its perfect subtrees, largest
/// first, so appending and taking the root cost O(log n) without the old leaves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frontier {
    size: u64,
    stack: Vec<Hash>,
}

impl Frontier {
    /// Leaves in the tree.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Appends a leaf hash.
    pub fn push(&mut self, leaf: Hash) {
        let mut node = leaf;
        let mut size = self.size;
        // Each trailing one bit of the old size is a perfect subtree of the new leaf's
        // height: merge them.
        while size & 1 == 1 {
            let Some(left) = self.stack.pop() else {
                break;
            };
            node = node_hash(&left, &node);
            size >>= 1;
        }
        self.stack.push(node);
        self.size += 1;
    }

    /// The tree hash, as [`root`] computes it from every leaf.
    pub fn root(&self) -> Hash {
        let mut nodes = self.stack.iter().rev();
        let Some(last) = nodes.next() else {
            return root(&[]);
        };
        nodes.fold(*last, |right, left| node_hash(left, &right))
    }
}

/// The audit path proving leaf `index` is in the tree of `leaves` (RFC 6962 §2.1.1),
/// or `None` when `index` is outside it.
pub fn inclusion_proof(index: usize, leaves: &[Hash]) -> Option<Vec<Hash>> {
    if index >= leaves.len() {
        return None;
    }
    let mut path = Vec::new();
    path_into(index, leaves, &mut path);
    Some(path)
}

fn path_into(index: usize, leaves: &[Hash], path: &mut Vec<Hash>) {
    let n = leaves.len();
    if n <= 1 {
        return;
    }
    let k = split(n);
    if index < k {
        path_into(index, &leaves[..k], path);
        path.push(root(&leaves[k..]));
    } else {
        path_into(index - k, &leaves[k..], path);
        path.push(root(&leaves[..k]));
    }
}

/// Whether `path` proves `leaf` is leaf `index` of a tree of `size` leaves with
/// `root` (RFC 9162 §2.1.3.2).
pub fn verify_inclusion(index: u64, size: u64, leaf: &Hash, path: &[Hash], root: &Hash) -> bool {
    if index >= size {
        return false;
    }
    let (mut fn_, mut sn) = (index, size - 1);
    let mut r = *leaf;
    for p in path {
        if sn == 0 {
            return false;
        }
        if fn_ & 1 == 1 || fn_ == sn {
            r = node_hash(p, &r);
            if fn_ & 1 == 0 {
                while fn_ & 1 == 0 && fn_ != 0 {
                    fn_ >>= 1;
                    sn >>= 1;
                }
            }
        } else {
            r = node_hash(&r, p);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    sn == 0 && &r == root
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(hash: &Hash) -> String {
        ::hex::encode(hash)
    }

    // The leaf inputs and tree roots of the Certificate Transparency reference
    // implementation's test data (the 8-leaf tree of RFC 6962's examples).
    const LEAVES: [&[u8]; 8] = [
        b"",
        b"\x00",
        b"\x10",
        b"\x20\x21",
        b"\x30\x31",
        b"\x40\x41\x42\x43",
        b"\x50\x51\x52\x53\x54\x55\x56\x57",
        b"\x60\x61\x62\x63\x64\x65\x66\x67\x68\x69\x6a\x6b\x6c\x6d\x6e\x6f",
    ];
    const ROOTS: [&str; 8] = [
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
        "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
        "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
        "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
        "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
        "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
    ];

    #[test]
    fn roots_match_the_reference_vectors() {
        let leaves: Vec<Hash> = LEAVES.iter().map(|l| leaf_hash(l)).collect();
        for (n, want) in ROOTS.iter().enumerate() {
            assert_eq!(&hex(&root(&leaves[..=n])), want, "tree of {} leaves", n + 1);
        }
        assert_eq!(
            hex(&root(&[])),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn a_frontier_grown_leaf_by_leaf_has_the_roots_of_the_whole_tree() {
        let leaves: Vec<Hash> = (0..70u8).map(|i| leaf_hash(&[i])).collect();
        let mut frontier = Frontier::default();
        assert_eq!(frontier.root(), root(&[]));
        for (n, leaf) in leaves.iter().enumerate() {
            frontier.push(*leaf);
            assert_eq!(frontier.size(), n as u64 + 1);
            assert_eq!(frontier.root(), root(&leaves[..=n]), "{} leaves", n + 1);
        }
    }

    #[test]
    fn every_leaf_of_every_size_proves_and_nothing_else_does() {
        let leaves: Vec<Hash> = (0..13u8).map(|i| leaf_hash(&[i])).collect();
        for size in 1..=leaves.len() {
            let tree = &leaves[..size];
            let r = root(tree);
            for (i, leaf) in tree.iter().enumerate() {
                let path = inclusion_proof(i, tree).unwrap();
                assert!(verify_inclusion(i as u64, size as u64, leaf, &path, &r));
                // Another leaf, index or root does not verify.
                let other = leaf_hash(b"forged");
                assert!(!verify_inclusion(i as u64, size as u64, &other, &path, &r));
                if size > 1 {
                    let j = (i + 1) % size;
                    assert!(!verify_inclusion(j as u64, size as u64, leaf, &path, &r));
                }
                assert!(!verify_inclusion(
                    i as u64,
                    size as u64,
                    leaf,
                    &path,
                    &other
                ));
            }
            assert!(inclusion_proof(size, tree).is_none());
        }
    }
}
