//! When the pass gives way to deepening: a tree whose levels grow like a bushy one's.

/// Recognises a bushy tree from the widths of the last levels: each of the last two at least
/// [`Bushy::GROWTH`] times as wide as the one before, the last at least [`Bushy::WIDTH`] wide.
/// On such a tree the pass would expand every position short of the mate, where deepening,
/// with its table, finds the mate after walking part of its last iteration: the lone-king
/// problems of 11-17 plies took the pass 3-4x deepening's time (`9/9/9/9/9/9/9/9/1k7 b
/// S4P2r2b4g3s4n4l14p 1`: levels 1,168, 5,196, 20,638, 75,759, 269,825 positions; 228 ms
/// against 73 ms). The long problems' levels grow less than 2x a level once they are 16 K wide
/// (加藤徹 4197: 14,237 -> 23,457; 9029: 14,914 -> 22,563; chain 207: 15,785 -> 31,420), and
/// narrower levels cost too little to judge by.
#[derive(Default)]
pub(crate) struct Bushy {
    /// The widths of the last three levels seen, oldest first, and the depth of the last.
    widths: [usize; 3],
    depth: u32,
}

impl Bushy {
    const WIDTH: usize = 1 << 14;
    const GROWTH: usize = 3;

    /// Notes level `depth`'s width; true if the tree is bushy.
    pub(crate) fn note(&mut self, depth: u32, width: usize) -> bool {
        if depth == self.depth + 1 {
            self.widths = [self.widths[1], self.widths[2], width];
        } else if depth != self.depth {
            // Levels passed unseen (the narrow loop's): no growth to judge by yet.
            self.widths = [0, 0, width];
        }
        self.depth = depth;
        let [a, b, c] = self.widths;
        a > 0 && c >= Self::WIDTH && b >= Self::GROWTH * a && c >= Self::GROWTH * b
    }
}
