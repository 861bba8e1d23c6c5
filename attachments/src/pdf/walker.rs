//! Runs page content streams just far enough to place text: the text and graphics matrices,
//! fonts and the form XObjects that pages draw. Line and word breaks are inferred from where
//! each run of text starts relative to where the previous one ended.

use std::collections::HashMap;

use lopdf::content::{Content, Operation};
use lopdf::{Dictionary, Document, Object, ObjectId};

use super::font::Font;
use super::geometry::Matrix;
use super::{number, Budget, Exhausted};
use crate::sink::Sink;

/// Forms inside forms: real documents nest two or three deep.
const MAX_FORM_DEPTH: usize = 8;
/// Unbalanced `q` operators would otherwise grow the state stack with the content's length.
const MAX_SAVED_STATES: usize = 64;
/// A move to the side larger than this share of the font size, with no space glyph, is a word
/// gap; kerning stays well below it.
const WORD_GAP: f64 = 0.15;
/// A move up or down larger than this share of the font size starts a new line.
const LINE_GAP: f64 = 0.5;

pub(super) struct Walker<'a, 's> {
    doc: &'a Document,
    budget: Budget,
    fonts: Vec<Font<'a>>,
    font_ids: HashMap<ObjectId, usize>,
    /// The forms being drawn, innermost last.
    forms: Vec<ObjectId>,
    /// Where the previous run of text ended.
    last: Option<Pen>,
    sink: &'s mut Sink,
}

#[derive(Debug, Clone, Copy)]
struct Pen {
    x: f64,
    y: f64,
    size: f64,
}

/// The graphics and text state of one content stream.
struct State {
    ctm: Matrix,
    saved: Vec<Matrix>,
    tm: Matrix,
    tlm: Matrix,
    font: Option<usize>,
    size: f64,
    char_spacing: f64,
    word_spacing: f64,
    horizontal_scale: f64,
    leading: f64,
}

impl State {
    fn new(ctm: Matrix) -> Self {
        State {
            ctm,
            saved: Vec::new(),
            tm: Matrix::IDENTITY,
            tlm: Matrix::IDENTITY,
            font: None,
            size: 0.0,
            char_spacing: 0.0,
            word_spacing: 0.0,
            horizontal_scale: 1.0,
            leading: 0.0,
        }
    }

    fn pen(&self) -> Pen {
        let m = self.tm.then(self.ctm);
        let (x, y) = m.origin();
        Pen { x, y, size: (self.size * m.vertical_scale()).abs() }
    }

    fn next_line(&mut self, tx: f64, ty: f64) {
        self.tlm = Matrix::translation(tx, ty).then(self.tlm);
        self.tm = self.tlm;
    }

    fn advance(&mut self, tx: f64) {
        self.tm = Matrix::translation(tx * self.horizontal_scale, 0.0).then(self.tm);
    }
}

impl<'a, 's> Walker<'a, 's> {
    pub(super) fn new(doc: &'a Document, budget: Budget, sink: &'s mut Sink) -> Self {
        Walker { doc, budget, fonts: Vec::new(), font_ids: HashMap::new(), forms: Vec::new(), last: None, sink }
    }

    pub(super) fn sink(&mut self) -> &mut Sink {
        self.sink
    }

    /// Reads one page. `Ok(false)` when its content could not be parsed at all.
    pub(super) fn page(&mut self, page_id: ObjectId) -> Result<bool, Exhausted> {
        let content = match self.doc.get_page_content_with_limit(page_id, self.budget.remaining()) {
            Ok(content) => content,
            Err(e) if super::is_over_limit(&e) => return Err(Exhausted),
            Err(_) => return Ok(false),
        };
        self.budget.charge(content.len())?;
        let resources = self.page_resources(page_id);
        self.last = None;
        self.run(&content, &resources, Matrix::IDENTITY)
    }

    /// The page's own resources first, then those it inherits.
    fn page_resources(&self, page_id: ObjectId) -> Vec<&'a Dictionary> {
        let Ok((direct, inherited)) = self.doc.get_page_resources(page_id) else { return Vec::new() };
        let inherited = inherited.into_iter().filter_map(|id| self.doc.get_dictionary(id).ok());
        direct.into_iter().chain(inherited).collect()
    }

    /// Executes one content stream; `Ok(false)` when not even its first operator parses.
    fn run(&mut self, content: &[u8], resources: &[&'a Dictionary], ctm: Matrix) -> Result<bool, Exhausted> {
        let mut state = State::new(ctm);
        let mut parsed_any = false;
        for operation in Content::decode_iter(content) {
            // What came before a syntax error is kept; what follows it cannot be trusted.
            let Ok(operation) = operation else { break };
            parsed_any = true;
            self.operate(&operation, &mut state, resources)?;
            if self.sink.is_truncated() {
                break;
            }
        }
        Ok(parsed_any || content.iter().all(u8::is_ascii_whitespace))
    }

    fn operate(&mut self, op: &Operation, state: &mut State, resources: &[&'a Dictionary]) -> Result<(), Exhausted> {
        let num = |i: usize| op.operands.get(i).and_then(number);
        match op.operator.as_str() {
            "q" if state.saved.len() < MAX_SAVED_STATES => state.saved.push(state.ctm),
            "Q" => state.ctm = state.saved.pop().unwrap_or(state.ctm),
            "cm" => {
                if let Some(m) = matrix(&op.operands) {
                    state.ctm = m.then(state.ctm);
                }
            }
            "BT" => {
                state.tm = Matrix::IDENTITY;
                state.tlm = Matrix::IDENTITY;
            }
            "Tf" => {
                state.font = self.font(resources, op.operands.first())?;
                state.size = num(1).unwrap_or(0.0);
            }
            "Tc" => state.char_spacing = num(0).unwrap_or(0.0),
            "Tw" => state.word_spacing = num(0).unwrap_or(0.0),
            "Tz" => state.horizontal_scale = num(0).unwrap_or(100.0) / 100.0,
            "TL" => state.leading = num(0).unwrap_or(0.0),
            "Td" => state.next_line(num(0).unwrap_or(0.0), num(1).unwrap_or(0.0)),
            "TD" => {
                let ty = num(1).unwrap_or(0.0);
                state.leading = -ty;
                state.next_line(num(0).unwrap_or(0.0), ty);
            }
            "Tm" => {
                if let Some(m) = matrix(&op.operands) {
                    state.tm = m;
                    state.tlm = m;
                }
            }
            "T*" => state.next_line(0.0, -state.leading),
            "Tj" => self.show_operand(op.operands.first(), state),
            "'" => {
                state.next_line(0.0, -state.leading);
                self.show_operand(op.operands.first(), state);
            }
            "\"" => {
                state.word_spacing = num(0).unwrap_or(state.word_spacing);
                state.char_spacing = num(1).unwrap_or(state.char_spacing);
                state.next_line(0.0, -state.leading);
                self.show_operand(op.operands.get(2), state);
            }
            "TJ" => self.show_array(op.operands.first(), state),
            "Do" => self.draw_form(op.operands.first(), state, resources)?,
            _ => {}
        }
        Ok(())
    }

    fn show_array(&mut self, operand: Option<&Object>, state: &mut State) {
        let Some(Object::Array(items)) = operand else { return };
        for item in items {
            match item {
                Object::String(bytes, _) => self.show(bytes, state),
                // Adjustments are in thousandths of the font size, and move left when positive.
                item => state.advance(-number(item).unwrap_or(0.0) / 1000.0 * state.size),
            }
        }
    }

    fn show_operand(&mut self, operand: Option<&Object>, state: &mut State) {
        if let Some(Object::String(bytes, _)) = operand {
            self.show(bytes, state);
        }
    }

    fn show(&mut self, bytes: &[u8], state: &mut State) {
        let Some(font) = state.font.and_then(|i| self.fonts.get(i)) else { return };
        let mut text = String::new();
        if let Some(encoding) = &font.encoding {
            if encoding.write_to_string(bytes, &mut text).is_err() {
                text.clear();
            }
        }
        let start = state.pen();
        for code in font.codes(bytes) {
            let word_spacing = if code == 32 && !font.two_byte { state.word_spacing } else { 0.0 };
            state.advance(font.width(code) / 1000.0 * state.size + state.char_spacing + word_spacing);
        }
        let text = clean(&text);
        if text.trim().is_empty() {
            return;
        }
        self.separate_from_last(start);
        self.sink.push_str(&text);
        self.last = Some(Pen { size: start.size, ..state.pen() });
    }

    /// Adds the line break or space that the jump from the previous run to this one implies.
    fn separate_from_last(&mut self, start: Pen) {
        let Some(last) = self.last else { return };
        let size = start.size.max(last.size);
        if (start.y - last.y).abs() > LINE_GAP * size {
            self.sink.line_break();
        } else {
            let gap = start.x - last.x;
            if (gap > WORD_GAP * size || gap < -size) && !self.sink.ends_with_whitespace() {
                self.sink.space();
            }
        }
    }

    /// Resolves a `Tf` font name, loading each font once per document.
    fn font(&mut self, resources: &[&'a Dictionary], name: Option<&Object>) -> Result<Option<usize>, Exhausted> {
        let Some((id, object)) = self.resource(resources, b"Font", name) else { return Ok(None) };
        let Ok(dict) = object.as_dict() else { return Ok(None) };
        if let Some(index) = id.and_then(|id| self.font_ids.get(&id)) {
            return Ok(Some(*index));
        }
        self.budget.charge(0)?;
        let font = Font::load(self.doc, dict, &mut self.budget)?;
        self.fonts.push(font);
        let index = self.fonts.len() - 1;
        if let Some(id) = id {
            self.font_ids.insert(id, index);
        }
        Ok(Some(index))
    }

    fn draw_form(
        &mut self,
        name: Option<&Object>,
        state: &State,
        resources: &[&'a Dictionary],
    ) -> Result<(), Exhausted> {
        let Some((Some(id), Object::Stream(form))) = self.resource(resources, b"XObject", name) else { return Ok(()) };
        let is_form = form.dict.get(b"Subtype").and_then(Object::as_name).is_ok_and(|s| s == b"Form");
        // A form that draws itself, directly or through others, would recurse forever, and the
        // stack overflow that ends it aborts the process; catch_unwind cannot stop that.
        if !is_form || self.forms.len() >= MAX_FORM_DEPTH || self.forms.contains(&id) {
            return Ok(());
        }
        let content = match form.decompressed_content_with_limit(self.budget.remaining()) {
            Ok(content) => content,
            Err(e) if super::is_over_limit(&e) => return Err(Exhausted),
            Err(_) => return Ok(()),
        };
        self.budget.charge(content.len())?;
        let ctm = form.dict.get(b"Matrix").ok().and_then(|m| m.as_array().ok()).and_then(|m| matrix(m));
        let ctm = ctm.unwrap_or(Matrix::IDENTITY).then(state.ctm);
        let own = form.dict.get_deref(b"Resources", self.doc).and_then(Object::as_dict);
        let form_resources = match own {
            Ok(own) => vec![own],
            Err(_) => resources.to_vec(),
        };
        self.forms.push(id);
        let result = self.run(&content, &form_resources, ctm);
        self.forms.pop();
        result.map(|_| ())
    }

    /// Looks `name` up in a resource category (`/Font`, `/XObject`) of the first resource
    /// dictionary that has it.
    fn resource(
        &self,
        resources: &[&'a Dictionary],
        category: &[u8],
        name: Option<&Object>,
    ) -> Option<(Option<ObjectId>, &'a Object)> {
        let name = name?.as_name().ok()?;
        resources.iter().find_map(|dict| {
            let entries = dict.get_deref(category, self.doc).ok()?.as_dict().ok()?;
            self.doc.dereference(entries.get(name).ok()?).ok()
        })
    }
}

fn matrix(operands: &[Object]) -> Option<Matrix> {
    let values: Vec<f64> = operands.iter().filter_map(number).collect();
    let values: [f64; 6] = values.try_into().ok()?;
    Some(Matrix::new(values))
}

/// Drops what carries no meaning for a reader (control characters, and the replacement
/// character that stands for unmapped glyphs) and spells out typographic ligatures, so that
/// "ﬁle" can be found as "file".
fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\u{FB00}' => out.push_str("ff"),
            '\u{FB01}' => out.push_str("fi"),
            '\u{FB02}' => out.push_str("fl"),
            '\u{FB03}' => out.push_str("ffi"),
            '\u{FB04}' => out.push_str("ffl"),
            '\u{FB05}' | '\u{FB06}' => out.push_str("st"),
            '\u{FFFD}' => {}
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::clean;

    #[test]
    fn ligatures_are_spelled_out_and_noise_dropped() {
        assert_eq!(clean("speciﬁcation\u{FFFD}\u{1}ﬂow"), "specificationflow");
    }
}
