"""The survey page's one style sheet and one script, and the Content-Security-Policy that
admits exactly those two by hash (the page loads nothing else)."""

from __future__ import annotations

import base64
import hashlib

CSS = """\
:root{--fg:#1b1f24;--mute:#57606a;--line:#d0d7de;--bg:#fff;--alt:#f6f8fa;--acc:#0a58ca;
--err:#c62828;--warn:#b26a00;--info:#1565c0;--ok:#2e7d32;--bar:#3b6ea5;--bar2:#9db9d9}
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg);margin:0 auto;max-width:1400px;padding:1rem 1.5rem 4rem}
h1{font-size:1.6rem;margin:.5rem 0}h2{font-size:1.3rem;margin:2.2rem 0 .6rem;
border-bottom:1px solid var(--line);padding-bottom:.2rem}h3{font-size:1.05rem;margin:.2rem 0}
a{color:var(--acc)}nav a{margin-right:.9rem}.mute,small{color:var(--mute)}
code,.path{font:13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:.6rem;
margin:1rem 0}.card{border:1px solid var(--line);border-radius:6px;padding:.5rem .7rem;
background:var(--alt)}.card b{display:block;font-size:1.25rem}.card>span{color:var(--mute);
font-size:.85rem}
table{border-collapse:collapse;margin:.4rem 0 1rem;font-size:.9rem}
th,td{border-bottom:1px solid var(--line);padding:.25rem .55rem;text-align:left;
vertical-align:top}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
thead th{background:var(--alt);position:sticky;top:0}
th button{font:inherit;font-weight:600;border:0;background:none;padding:0;cursor:pointer;
color:inherit}th button::after{content:" \\2195";color:var(--mute)}
th[aria-sort=ascending] button::after{content:" \\2191"}
th[aria-sort=descending] button::after{content:" \\2193"}
tbody tr:nth-child(even){background:var(--alt)}
.sev-error{color:var(--err);font-weight:600}.sev-warning{color:var(--warn)}
.sev-info{color:var(--info)}.accepts{color:var(--ok)}.refuses{color:var(--err);
font-weight:600}.no-sframe{color:var(--mute)}
.scroll{overflow-x:auto}
table.packages td:nth-child(n+6),table.files td:nth-child(n+4):nth-child(-n+8){
text-align:right;font-variant-numeric:tabular-nums}table.files td:nth-child(-n+3){
font:13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere}
table.packages td,td.n{
white-space:nowrap}.zero{color:var(--mute)}
svg{display:block;max-width:100%;height:auto;margin:.5rem 0 1rem}
svg text{font:12px system-ui,sans-serif;fill:var(--fg)}svg .axis{stroke:var(--mute)}
svg .bar{fill:var(--bar)}svg .bar2{fill:var(--bar2)}svg .error{fill:var(--err)}
svg .warning{fill:#e0a030}svg .info{fill:var(--info)}svg .accepts{fill:var(--ok)}
svg .refuses{fill:var(--err)}svg .eh{fill:#8a8f98}
section.pkg{border-top:1px solid var(--line);padding:.6rem 0;content-visibility:auto;
contain-intrinsic-size:auto 160px}section.pkg.current{background:#fff8c5;outline:2px
solid #d4a72c;padding:.6rem}section.pkg p{margin:.2rem 0}
ul.names{columns:3 16rem;padding-left:1.2rem}#pkg-detail{min-height:85vh}
.legend>span{margin-right:1rem}svg.sw{display:inline-block;margin:0 .3em 0 0;
vertical-align:-.1em}
"""

# The script: (1) one delegated click handler sorts any table.sortable: numeric columns
# compare data-v (else the text) as numbers, empty last either way; text columns use a
# numeric-aware collator; the packages table (#pkg-table) sorts its records and shows one page.
# (2) The packages table and a package's details are built from the JSON block with
# textContent only. (3) A hash link opens the <details> around its target, or builds the
# package's details first.
JS = r"""
"use strict";
(function(){
var coll=new Intl.Collator("en",{numeric:true,sensitivity:"base"});
var PAGE=100;
function num(n){return n.toLocaleString("en-US");}
function size(n){var u=[["GiB",1073741824],["MiB",1048576],["KiB",1024]];
for(var i=0;i<3;i++)if(n>=u[i][1])return (n/u[i][1]).toFixed(1)+" "+u[i][0];return n+" B";}
function pct(r){return r===null?"\u2014":(100*r).toFixed(1)+" %";}
function el(tag,attrs,kids){var e=document.createElement(tag),k;
for(k in attrs)e.setAttribute(k,attrs[k]);
(kids||[]).forEach(function(c){e.appendChild(typeof c==="string"?document.createTextNode(c):c);});
return e;}
function sortBy(list,get,num,asc){
var keyed=list.map(function(r,i){return[get(r),i,r];});
keyed.sort(function(a,b){var x=a[0],y=b[0],c;
if(num){var xn=x===null||isNaN(x),yn=y===null||isNaN(y);
if(xn||yn)return xn===yn?a[1]-b[1]:(xn?1:-1);c=x-y;}else c=coll.compare(x,y);
return c===0?a[1]-b[1]:(asc?c:-c);});
return keyed.map(function(k){return k[2];});}
function cellKey(td,num){var v=td.hasAttribute("data-v")?td.getAttribute("data-v"):td.textContent;
return num?(v===""?null:Number(v)):v;}
// -- packages --
var dataEl=document.getElementById("pkg-data");
var P=dataEl?JSON.parse(dataEl.textContent):[],byId={},shown=P,start=0;
P.forEach(function(r,i){byId[r[0]]=i;});
var FMT={6:num,7:num,8:pct,9:size,10:size,11:pct,12:num,13:num,14:num,15:num};
var table=document.getElementById("pkg-table");
function draw(){if(!table)return;var body=table.tBodies[0],frag=document.createDocumentFragment();
shown.slice(start,start+PAGE).forEach(function(r){var tr=el("tr");
tr.appendChild(el("td",{},[el("a",{href:"#"+r[0]},[r[1]])]));
for(var c=2;c<=15;c++){var f=FMT[c];tr.appendChild(el("td",{},[f?f(r[c]):r[c]]));}
frag.appendChild(tr);});
body.textContent="";body.appendChild(frag);
document.getElementById("pkg-range").textContent=shown.length?
"rows "+num(start+1)+"\u2013"+num(Math.min(start+PAGE,shown.length))+" of "+num(shown.length):
"no package";
document.getElementById("pkg-prev").disabled=start===0;
document.getElementById("pkg-next").disabled=start+PAGE>=shown.length;}
function setSort(th,asc){Array.prototype.forEach.call(th.parentElement.cells,function(h){
if(h.hasAttribute("aria-sort"))h.setAttribute("aria-sort","none");});
th.setAttribute("aria-sort",asc?"ascending":"descending");}
document.addEventListener("click",function(ev){
var b=ev.target.closest("table.sortable thead th button");if(!b)return;
var th=b.parentElement,t=th.closest("table"),col=th.cellIndex,isNum=th.classList.contains("n");
var asc=th.getAttribute("aria-sort")!=="ascending";
if(t===table){shown=sortBy(shown,function(r){return r[col+1];},isNum,asc);start=0;draw();}
else{var body=t.tBodies[0],rows=sortBy(Array.prototype.slice.call(body.rows),
function(r){return cellKey(r.cells[col],isNum);},isNum,asc);
var frag=document.createDocumentFragment();rows.forEach(function(r){frag.appendChild(r);});
body.appendChild(frag);}
setSort(th,asc);});
if(table){
document.getElementById("pkg-prev").addEventListener("click",function(){
start=Math.max(0,start-PAGE);draw();});
document.getElementById("pkg-next").addEventListener("click",function(){
if(start+PAGE<shown.length){start+=PAGE;draw();}});
document.getElementById("pkg-filter").addEventListener("input",function(ev){
var q=ev.target.value.toLowerCase();
shown=q?P.filter(function(r){return r[1].toLowerCase().indexOf(q)>=0||
r[3].toLowerCase().indexOf(q)>=0;}):P;start=0;
Array.prototype.forEach.call(table.tHead.rows[0].cells,function(h){h.setAttribute("aria-sort","none");});
draw();});
draw();}
function sev(s,text){return el("span",{"class":"sev-"+s},[text]);}
function details(r){
var f=[],sec=el("section",{"class":"pkg current",id:r[0]},[el("h3",{},[r[1]+" ",
el("small",{},[r[2]+" \u00b7 "+r[4]+" \u00b7 "+r[5]+" \u00b7 source "+r[3]])])]);
if(!r[6]){sec.appendChild(el("p",{"class":"mute"},["No ELF files."]));return sec;}
sec.appendChild(el("p",{},[num(r[6])+" ELF files, "+num(r[7])+" with .sframe; coverage "+
pct(r[8])+"; .sframe "+size(r[9])+", .eh_frame "+size(r[10])+"."]));
f.push("Findings: ");[["error","errors",12],["warning","warnings",13],["info","info",14]]
.forEach(function(s,i){if(i)f.push(", ");f.push(s[1]+" ");
f.push(r[s[2]]?sev(s[0],num(r[s[2]])):el("span",{"class":"zero"},["0"]));});
r[16].forEach(function(x,i){f.push(i?", ":"; ");f.push(el("code",{},[x[0]]));
f.push(" \u00d7"+num(x[1]));});
sec.appendChild(el("p",{},f));
var refusing=r[17].filter(function(x){return x[1]==="refuses";}).map(function(x){return x[0];});
var accepting=r[17].filter(function(x){return x[1]==="accepts";}).length;
if(r[17].length)sec.appendChild(el("p",{},["Readers: "].concat(refusing.length?
["refused by ",el("span",{"class":"refuses"},[refusing.join(", ")]),", "]:[],
["accepted by "+accepting+" of "+r[17].length])));
var heads=["Path",".sframe","Flags","FDEs","FREs","Coverage",".sframe",".eh_frame","Producer",
"Findings"];
var body=el("tbody");r[18].forEach(function(x){var fs=[];
x[9].forEach(function(y,i){if(i)fs.push(", ");fs.push(sev(y[1],y[0]));
fs.push(" \u00d7"+num(y[2]));});
body.appendChild(el("tr",{},[x[0],x[1]===null?"no":"v"+x[1],x[2],num(x[3]),num(x[4]),pct(x[5]),
size(x[6]),size(x[7]),x[8]].map(function(v){return el("td",{},[v]);})
.concat([el("td",{},fs.length?fs:["\u2014"])])));});
var tbl=el("table",{"class":"files"},[el("thead",{},[el("tr",{},heads.map(function(h){
return el("th",{},[h]);}))]),body]);
var kids=[el("summary",{},[num(r[6])+" ELF files"]),el("div",{"class":"scroll"},[tbl])];
if(r[19])kids.push(el("p",{"class":"mute"},[num(r[19])+" more files, without findings and "+
"better covered, are left out here; sfcheck survey report --json lists them all."]));
sec.appendChild(el("details",{open:""},kids));
sec.appendChild(el("p",{},[el("a",{href:"#packages"},["\u2191 Packages table"])]));return sec;}
function reveal(){var id=decodeURIComponent(location.hash.slice(1));if(!id)return;
var box=document.getElementById("pkg-detail"),el2=document.getElementById(id);
if(box&&byId.hasOwnProperty(id)&&!(el2&&box.contains(el2))){
box.textContent="";box.appendChild(details(P[byId[id]]));el2=document.getElementById(id);}
if(!el2)return;
for(var d=el2;d;d=d.parentElement)if(d.tagName==="DETAILS")d.open=true;el2.scrollIntoView();}
window.addEventListener("hashchange",reveal);reveal();
})();
"""


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


# default-src 'none' covers fetch, images, fonts, frames; the one style and script by hash.
CSP = (f"default-src 'none'; style-src {_csp_hash(CSS)}; script-src {_csp_hash(JS)}; "
       "img-src data:; base-uri 'none'; form-action 'none'")
