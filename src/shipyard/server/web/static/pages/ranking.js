// @ts-check
// Trials ranked on the searcher metric, for the colours and the drawing order of the
// experiment's charts. Pure (web/test/ranking.test.js tests it under node).

// Trial id -> its rank on the searcher metric (0: the best); trials without it are left out.
/**
 * @param {{smaller_is_better: boolean, trials: {id: number, best_validation?: number | null}[]}} exp
 * @returns {Map<number, number>}
 */
export function ranks(exp) {
  const ranked = exp.trials
    .filter((t) => t.best_validation !== null && t.best_validation !== undefined)
    .sort((a, b) => {
      const [x, y] = [Number(a.best_validation), Number(b.best_validation)];
      return exp.smaller_is_better ? x - y : y - x;
    });
  return new Map(ranked.map((t, i) => [t.id, i]));
}

// Drawing order: the worst first, so the best trials are drawn on top of the rest.
/**
 * @param {Map<number, number>} rank
 * @returns {(a: number, b: number) => number}
 */
export function bestLast(rank) {
  /** @param {number} id */
  const of = (id) => (rank.get(id) ?? rank.size);
  return (a, b) => of(b) - of(a);
}
