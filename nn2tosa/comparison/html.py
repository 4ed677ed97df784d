"""`nn2tosa compare --html FILE`: one self-contained page (no external assets, no network).

The page holds the comparison as JSON and draws, in the browser, with inline SVG:
- the error of every compared tensor along the graph's order (error / tolerance, log scale; the
  tolerance is the line at 1), one point (`circle.pt`) per compared tensor, the first divergence ringed;
- the source graph, one box per source tensor laid out by depth from the inputs, coloured: green
  within tolerance, red beyond, dark red the first divergence, grey not compared.
Below them, a table of every tensor (written here, so the page reads without JavaScript too).
"""
from __future__ import annotations

import html
import json
import math
from typing import Any

from nn2tosa.comparison.run import CompareResult
from nn2tosa.comparison.table import summary

_STYLE = """
body{font:13px/1.4 system-ui,Helvetica,Arial,sans-serif;margin:16px;color:#222}
h1{font-size:18px;margin:0 0 4px} pre{background:#f6f6f6;padding:8px;white-space:pre-wrap}
svg text{font:11px Helvetica,Arial,sans-serif} .box{overflow:auto;border:1px solid #ddd;margin:8px 0;max-height:720px}
table{border-collapse:collapse} td,th{border-bottom:1px solid #eee;padding:2px 6px;text-align:right}
td:nth-child(-n+5),th:nth-child(-n+5){text-align:left} tr.bad{background:#fde8e8} tr.first{background:#f8c0c0}
tr.skip{color:#888}
"""

_SCRIPT = r"""
(function(){
const D=JSON.parse(document.getElementById('data').textContent);
const NS='http://www.w3.org/2000/svg';
function el(name,attrs,parent,text){const e=document.createElementNS(NS,name);
  for(const k in attrs)e.setAttribute(k,attrs[k]); if(text!==undefined)e.textContent=text;
  if(parent)parent.appendChild(e); return e;}
function colour(r){return r.first?'#a00000':(!r.compared?'#bbbbbb':(r.ok?'#2e8b57':'#e03030'));}
// the error plot
const pts=D.rows.filter(r=>r.compared);
const W=Math.max(640,14*pts.length+80),H=300,L=60,B=40,T=10;
const plot=el('svg',{width:W,height:H,id:'plot'},document.getElementById('plotbox'));
const ys=pts.map(r=>Math.max(r.score,1e-4)).filter(v=>isFinite(v));
let lo=Math.floor(Math.log10(Math.min(1e-2,...ys))),hi=Math.ceil(Math.log10(Math.max(10,...ys)));
function y(v){v=isFinite(v)?Math.max(v,1e-4):Math.pow(10,hi);return T+(H-T-B)*(hi-Math.log10(v))/(hi-lo);}
function x(i){return L+(W-L-20)*(pts.length>1?i/(pts.length-1):0.5);}
for(let e=lo;e<=hi;e++){el('line',{x1:L,x2:W-10,y1:y(Math.pow(10,e)),y2:y(Math.pow(10,e)),stroke:e===0?'#e03030':'#eee',
  'stroke-dasharray':e===0?'4 3':''},plot);el('text',{x:L-6,y:y(Math.pow(10,e))+4,'text-anchor':'end'},plot,'1e'+e);}
el('text',{x:12,y:T+(H-B)/2,transform:'rotate(-90 12 '+(T+(H-B)/2)+')','text-anchor':'middle'},plot,'error / tolerance');
el('text',{x:L+(W-L)/2,y:H-8,'text-anchor':'middle'},plot,'source tensors in graph order');
let path='';pts.forEach((r,i)=>{path+=(i?'L':'M')+x(i).toFixed(1)+' '+y(r.score).toFixed(1);});
el('path',{d:path,fill:'none',stroke:'#99a'},plot);
pts.forEach((r,i)=>{const c=el('circle',{class:'pt',cx:x(i),cy:y(r.score),r:r.first?6:4,fill:colour(r),
  stroke:r.first?'#000':'none','data-tensor':r.tensor},plot);
  el('title',{},c,r.tensor+' ('+r.type+'): '+r.err+(r.ok?'':' beyond tolerance'));});
// the graph
const depth={},byKey={};D.rows.forEach(r=>{byKey[r.tensor]=r;});
D.rows.forEach(r=>{depth[r.tensor]=Math.max(0,...r.feeds.map(f=>f in depth?depth[f]+1:0));});
const levels=[];D.rows.forEach(r=>{(levels[depth[r.tensor]]=levels[depth[r.tensor]]||[]).push(r);});
const BW=190,BH=34,GX=24,GY=26,pos={};
levels.forEach((lv,d)=>lv.forEach((r,i)=>{pos[r.tensor]=[20+i*(BW+GX),20+d*(BH+GY)];}));
const GW=40+Math.max(1,...levels.map(l=>l.length))*(BW+GX),GH=40+levels.length*(BH+GY);
const g=el('svg',{width:GW,height:GH,id:'graph'},document.getElementById('graphbox'));
D.rows.forEach(r=>r.feeds.forEach(f=>{if(!(f in pos))return;const a=pos[f],b=pos[r.tensor];
  const x1=a[0]+BW/2,y1=a[1]+BH,x2=b[0]+BW/2,y2=b[1],bend=(depth[r.tensor]-depth[f]>1)?BW/2+16:0;
  el('path',{d:`M${x1} ${y1} C${x1+bend} ${y1+GY} ${x2+bend} ${y2-GY} ${x2} ${y2}`,fill:'none',stroke:'#999'},g);}));
D.rows.forEach(r=>{const p=pos[r.tensor];const n=el('g',{class:'node','data-tensor':r.tensor},g);
  el('rect',{x:p[0],y:p[1],width:BW,height:BH,rx:4,fill:colour(r),stroke:r.first?'#000':'#555'},n);
  el('text',{x:p[0]+6,y:p[1]+14,fill:'#fff'},n,r.tensor.length>30?r.tensor.slice(0,29)+'…':r.tensor);
  el('text',{x:p[0]+6,y:p[1]+28,fill:'#fff'},n,r.type+(r.compared?' '+r.err:' (not compared)'));
  el('title',{},n,r.tensor+' '+r.type+' '+r.shape+(r.note?' — '+r.note:''));});
document.body.setAttribute('data-drawn',pts.length);
})();
"""


def _score(v: float) -> float | str:
    return v if math.isfinite(v) else "Infinity"


def page_data(result: CompareResult) -> dict[str, Any]:
    rows = []
    for r in result.rows:
        p, m = r.point, r.metrics
        err = "" if m is None else (f"{m.lsb:.3g} LSB" if m.lsb is not None else f"{m.relative:.3g} rel")
        rows.append({"tensor": p.key, "type": p.op.split(".", 1)[-1], "shape": f"{list(p.type.shape)} {p.type.dtype}",
                     "feeds": p.feeds, "compared": m is not None, "ok": bool(m and m.ok), "first": r.first_divergence,
                     "score": 0.0 if m is None else _score(m.score), "err": err, "note": p.note or r.reason})
    return {"model": result.model, "rows": rows}


def to_html(result: CompareResult) -> str:
    data = json.dumps(page_data(result)).replace("</", "<\\/")
    esc = html.escape
    table = []
    for r in result.rows:
        p, m = r.point, r.metrics
        cls = "first" if r.first_divergence else ("skip" if m is None else ("" if m.ok else "bad"))
        cells = [str(p.order), p.key, p.op.split(".", 1)[-1], p.status,
                 f"{'x'.join(map(str, p.type.shape))} {p.type.dtype}"]
        if m is None:
            cells += ["", "", "", "", r.reason]
        else:
            err = f"{m.lsb:.3g} LSB" if m.lsb is not None else f"{m.ulp:.3g} ULP"
            cells += [f"{m.max_abs:.3g}", err, f"{m.sqnr_db:.3g}", f"{m.off}/{m.size}", p.note]
        table.append(f'<tr class="{cls}" data-tensor="{esc(p.key)}">' + "".join(f"<td>{esc(c)}</td>" for c in cells)
                     + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("#", "tensor", "type", "status", "shape", "max abs", "error",
                                             "SQNR dB", "off", "note"))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>nn2tosa compare: {esc(result.model)}</title>
<style>{_STYLE}</style></head><body>
<h1>nn2tosa compare: {esc(result.model)}</h1>
<p>reference: {esc(result.reference)} &middot; {esc(result.tolerance)} tolerance &middot; {esc(result.status)} on
{esc(result.inputs)} &middot; semantics {esc(result.semantics)}</p>
<pre>{esc(summary(result))}</pre>
<h2>Error per tensor, in graph order</h2><div class="box" id="plotbox"></div>
<h2>The graph</h2><div class="box" id="graphbox"></div>
<h2>Every tensor</h2><table><tr>{head}</tr>
{chr(10).join(table)}
</table>
<script type="application/json" id="data">{data}</script>
<script>{_SCRIPT}</script>
</body></html>
"""


__all__ = ["to_html", "page_data"]
