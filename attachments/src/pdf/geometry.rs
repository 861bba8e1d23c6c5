//! The affine matrices of PDF's coordinate systems, as far as text placement needs them.

/// `[a b c d e f]`, the row-vector convention of the PDF specification.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Matrix([f64; 6]);

impl Matrix {
    pub(super) const IDENTITY: Matrix = Matrix([1.0, 0.0, 0.0, 1.0, 0.0, 0.0]);

    pub(super) fn new(values: [f64; 6]) -> Self {
        Matrix(values)
    }

    pub(super) fn translation(x: f64, y: f64) -> Self {
        Matrix([1.0, 0.0, 0.0, 1.0, x, y])
    }

    /// `self` applied first, then `then`.
    pub(super) fn then(self, then: Matrix) -> Matrix {
        let [a, b, c, d, e, f] = self.0;
        let [a2, b2, c2, d2, e2, f2] = then.0;
        Matrix([
            a * a2 + b * c2,
            a * b2 + b * d2,
            c * a2 + d * c2,
            c * b2 + d * d2,
            e * a2 + f * c2 + e2,
            e * b2 + f * d2 + f2,
        ])
    }

    /// Where this matrix puts the origin.
    pub(super) fn origin(self) -> (f64, f64) {
        (self.0[4], self.0[5])
    }

    /// How much this matrix stretches a vertical unit, which is what a font size becomes.
    pub(super) fn vertical_scale(self) -> f64 {
        self.0[2].hypot(self.0[3])
    }
}

#[cfg(test)]
mod tests {
    use super::Matrix;

    #[test]
    fn translation_then_scale() {
        let m = Matrix::translation(10.0, 20.0).then(Matrix::new([2.0, 0.0, 0.0, 3.0, 1.0, 1.0]));
        assert_eq!(m.origin(), (21.0, 61.0));
        assert_eq!(m.vertical_scale(), 3.0);
    }
}
