// Real chess games as (FEN before the move, UCI move) pairs, for fixture rows
// that look like the analysed-game tables the loader reads.
//
// The FENs are computed here by playing the moves on a board: no legality
// search, but every move is checked for a piece of the side to move on its
// from-square, and castling, en passant, promotion, castling rights, the
// en-passant square and both clocks are tracked as FEN defines them. The
// games are short, well-known or constructed to contain the special moves.

const START = 'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1';

export const GAMES = {
  // Morphy v Duke of Brunswick and Count Isouard, Paris 1858 (the "Opera game").
  opera: 'e2e4 e7e5 g1f3 d7d6 d2d4 c8g4 d4e5 g4f3 d1f3 d6e5 f1c4 g8f6 f3b3 d8e7 b1c3 c7c6 ' +
    'c1g5 b7b5 c3b5 c6b5 c4b5 b8d7 e1c1 a8d8 d1d7 d8d7 h1d1 e7e6 b5d7 f6d7 b3b8 d7b8 d1d8',
  scholar: 'e2e4 e7e5 f1c4 b8c6 d1h5 g8f6 h5f7',
  fool: 'f2f3 e7e5 g2g4 d8h4',
  // Constructed: en passant (e5f6), a capture-promotion (g7h8q) that removes a
  // castling right, black castling queenside, white castling kingside.
  special: 'e2e4 d7d5 e4e5 f7f5 e5f6 b8c6 f6g7 c8e6 g7h8q d8d7 g1f3 e8c8 f1b5 a7a6 e1g1 a6b5 ' +
    'h8f8 d8f8 d2d4 f8f3 g2f3 e6h3 f1e1 d7d6',
};

const sq = (s) => ({ f: s.charCodeAt(0) - 97, r: s.charCodeAt(1) - 49 });
const name = (f, r) => String.fromCharCode(97 + f) + String.fromCharCode(49 + r);

function parseFen(fen) {
  const [placement, side, castling, ep, half, full] = fen.split(' ');
  const board = Array.from({ length: 8 }, () => Array(8).fill(null));
  placement.split('/').forEach((row, i) => {
    let f = 0;
    for (const c of row) {
      if (c >= '1' && c <= '8') f += Number(c);
      else board[7 - i][f++] = c;
    }
  });
  return { board, side, castling: castling === '-' ? '' : castling, ep, half: Number(half), full: Number(full) };
}

function toFen(p) {
  const rows = [];
  for (let r = 7; r >= 0; r--) {
    let s = '', empty = 0;
    for (let f = 0; f < 8; f++) {
      const c = p.board[r][f];
      if (!c) { empty++; continue; }
      if (empty) { s += empty; empty = 0; }
      s += c;
    }
    if (empty) s += empty;
    rows.push(s);
  }
  return `${rows.join('/')} ${p.side} ${p.castling || '-'} ${p.ep} ${p.half} ${p.full}`;
}

function play(p, uci) {
  const from = sq(uci.slice(0, 2)), to = sq(uci.slice(2, 4)), promo = uci[4];
  const piece = p.board[from.r][from.f];
  const white = p.side === 'w';
  if (!piece || (piece === piece.toUpperCase()) !== white)
    throw new Error(`${uci}: no ${white ? 'white' : 'black'} piece on ${uci.slice(0, 2)}`);
  const target = p.board[to.r][to.f];
  const kind = piece.toLowerCase();
  let capture = !!target;
  // Castling: the king moves two files (or onto its own rook, king-takes-rook).
  if (kind === 'k' && (Math.abs(to.f - from.f) === 2 || (target && target.toLowerCase() === 'r' &&
      (target === target.toUpperCase()) === white))) {
    const kingside = to.f > from.f;
    const rookFrom = kingside ? 7 : 0, kingTo = kingside ? 6 : 2, rookTo = kingside ? 5 : 3;
    p.board[from.r][from.f] = null;
    p.board[from.r][rookFrom] = null;
    p.board[from.r][kingTo] = piece;
    p.board[from.r][rookTo] = white ? 'R' : 'r';
    capture = false;
  } else {
    if (kind === 'p' && from.f !== to.f && !target) { // en passant
      p.board[from.r][to.f] = null;
      capture = true;
    }
    p.board[from.r][from.f] = null;
    p.board[to.r][to.f] = promo ? (white ? promo.toUpperCase() : promo) : piece;
  }
  // Rights vanish when the king moves or a rook leaves or is taken on its corner.
  const drop = (c) => { p.castling = p.castling.replace(c, ''); };
  if (piece === 'K') { drop('K'); drop('Q'); }
  if (piece === 'k') { drop('k'); drop('q'); }
  for (const [s, c] of [['h1', 'K'], ['a1', 'Q'], ['h8', 'k'], ['a8', 'q']]) {
    if (uci.slice(0, 2) === s || uci.slice(2, 4) === s) drop(c);
  }
  p.ep = kind === 'p' && Math.abs(to.r - from.r) === 2 ? name(from.f, (from.r + to.r) / 2) : '-';
  p.half = kind === 'p' || capture ? 0 : p.half + 1;
  if (!white) p.full++;
  p.side = white ? 'b' : 'w';
}

// [{fen, move}] for each move of a game.
export function positions(moves) {
  const p = parseFen(START);
  return moves.split(' ').map((m) => {
    const fen = toFen(p);
    play(p, m);
    return { fen, move: m };
  });
}
