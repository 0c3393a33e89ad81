// @ts-check
// Colours of marks that are not the theme's: trials by rank, and a few side by side.

import { cssVar } from "./theme.js";

// rankColors(count)(rank): good to bad, rank 0 (the best) teal, through green and yellow,
// to orange (the worst). The theme is read once here, not once a mark (10,000 a draw).
/**
 * @param {number} count
 * @param {number} [alpha]
 * @returns {(rank: number) => string}
 */
export function rankColors(count, alpha = 0.85) {
  const lightness = cssVar("--scheme") === "dark" ? 62 : 42;
  return (rank) => {
    const t = count > 1 ? rank / (count - 1) : 0;
    const hue = 160 - t * 130; // teal (good) through yellow to orange-red (bad)
    return `hsla(${hue}, 70%, ${lightness}%, ${alpha})`;
  };
}

// Distinct colours for a few trials side by side (the compare view).
export const PALETTE = ["#2f7ed8", "#e4572e", "#17a589", "#a05195", "#f0a202"];
