#!/usr/bin/env bash
# GB/s against row length (mean segment length for segments), log2 x, for reduce-tune, CUB,
# torch, CuPy and the streaming-read ceiling, from the CSVs of reduce_bench_segmented and
# bench/frameworks_segmented.py (same columns). One panel per problem (rows, columns, segments),
# one row of panels per total element count; cold L2, results that passed their check only.
# Usage: bench/plot_segmented.sh [-d DTYPE] [-o OP] [-n N[,N...]] [-L] OUT.png CSV...
#   -d float32 (default), -o sum (default), -n 16777216 (default; the element counts to plot),
#   -L: logarithmic GB/s axis (CUB spans several hundredfold).
# Needs gnuplot (Debian/Ubuntu: apt-get install gnuplot-nox).
set -euo pipefail
dtype=float32 op=sum ns=16777216 logy=0
while getopts d:o:n:L f; do
  case $f in
  d) dtype=$OPTARG ;;
  o) op=$OPTARG ;;
  n) ns=$OPTARG ;;
  L) logy=1 ;;
  *) sed -n '2,10p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || { sed -n '2,10p' "$0" >&2; exit 2; }
out=$1
shift
command -v gnuplot >/dev/null || { echo "plot_segmented.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 3; }
for f in "$@"; do [ -r "$f" ] || { echo "plot_segmented.sh: cannot read $f" >&2; exit 3; }; done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The device, from the first CSV's comment line.
device=$(sed -n '1s/^# device=\([^;]*\);.*/\1/p' "$1")
contestants="reduce-tune cub cub-iter torch cupy ceiling"
IFS=, read -r -a nlist <<<"$ns"

# One data file per (n, problem, contestant): x = row length (cols) or mean segment length, y = GB/s.
# Columns: 1 problem 2 dtype 3 op 4 rows 5 cols 6 segments 7 n ... 9 length 12 mode 13 contestant
# 18 gbps 20 ok (21 config may hold quoted commas; it comes last and is not read).
awk -F, -v dt="$dtype" -v op="$op" -v dir="$tmp" '
  /^#/ || $1 == "problem" { next }
  $2 == dt && $3 == op && $12 == "cold" && $20 == 1 {
    x = ($1 == "segments") ? $9 : $5
    f = dir "/" $7 "_" $1 "_" $13 ".dat"
    print x, $18 >> f
  }' "$@"
for f in "$tmp"/*.dat; do [ -e "$f" ] && sort -g -o "$f" "$f"; done
# The problems the CSVs hold, in this order; none: all three, each marked "no data".
problems=()
for p in rows columns segments; do
  compgen -G "$tmp/*_${p}_*.dat" >/dev/null && problems+=("$p")
done
[ ${#problems[@]} -gt 0 ] || problems=(rows columns segments)

{
  width=$((600 * ${#problems[@]})); [ "$width" -ge 1000 ] || width=1000 # the title fits
  echo "set terminal pngcairo size $width,$((600 * ${#nlist[@]})) font 'Sans,10'"
  echo "set output '$out'"
  echo "set termoption noenhanced"
  echo "set grid"
  echo "set logscale x 2"
  echo "set format x '2^%L'"
  if [ "$logy" = 1 ]; then echo "set logscale y 10"; echo "set yrange [*:*]"; else echo "set yrange [0:*]"; fi
  echo "set key outside bottom center horizontal"
  echo "set multiplot layout ${#nlist[@]},${#problems[@]} title 'Segmented $dtype $op, cold L2: GB/s (bytes read / time) against row or mean segment length, $device'"
  for n in "${nlist[@]}"; do
    for p in "${problems[@]}"; do
      xl="row length (cols)"
      [ "$p" = segments ] && xl="mean segment length (skewed)"
      echo "set title '$p, n = $n elements'"
      echo "set xlabel '$xl'"
      echo "set ylabel 'GB/s'"
      plots=()
      for c in $contestants; do
        f="$tmp/${n}_${p}_${c}.dat"
        [ -s "$f" ] || continue
        case $c in
        reduce-tune) style="linespoints lw 2 pt 7 lc rgb '#9400d3'" ;;
        cub) style="linespoints lw 2 pt 5 lc rgb '#009e73'" ;;
        cub-iter) style="linespoints lw 1 pt 4 dt 3 lc rgb '#009e73'" ;;
        torch) style="linespoints lw 2 pt 9 lc rgb '#e69f00'" ;;
        cupy) style="linespoints lw 1 pt 8 lc rgb '#d55e00'" ;;
        *) style="lines lw 1 dt 2 lc rgb 'black'" ;;
        esac
        plots+=("'$f' using 1:2 with $style title '$c'")
      done
      if [ ${#plots[@]} -eq 0 ]; then
        echo "set label 1 'no data' at graph 0.45, 0.5"
        echo "plot [1:2**24] 1 notitle lc rgb 'white'" # 1: defined on a log axis too (-L)
        echo "unset label 1"
      else
        (IFS=,; echo "plot ${plots[*]}")
      fi
    done
  done
  echo "unset multiplot"
} >"$tmp/plot.gp"
gnuplot "$tmp/plot.gp"
[ -s "$out" ] || { echo "plot_segmented.sh: gnuplot wrote no $out" >&2; exit 3; }
echo "plot_segmented.sh: wrote $out"
