//! The self-contained HTML report: one file with its styles, script and data inline, and a
//! Content-Security-Policy that forbids every request (`default-src 'none'`), so it opens offline
//! and cannot fetch anything even if some text in it tried to.
//!
//! * Text from the model and the corpus (words, document snippets, names) is escaped: in HTML by
//!   [`crate::plot::escape`], in the data block by JSON with `<`, `>`, `&` and the line separators
//!   written as `\u` escapes (so no `</script>` can end the block), and the script puts it in the
//!   page with `textContent`, never as markup.
//! * The data is what [`crate::vis::Vis`] computed, rounded to 6 significant digits: per topic
//!   its candidate words with log φ and lift (the page ranks them by relevance for the slider's λ,
//!   as LDAvis does), the salient words, and the top documents. At K = 1,000 the map draws 1,000
//!   circles (labels on the 50 largest), and a topic's bars are recomputed from its own
//!   candidates only, so moving the slider costs the same at any K.
//! * `#selftest` at the end of the address makes the page exercise itself (select a topic by a
//!   click on its circle, move λ, count circles and resource requests) and write the outcome into
//!   `<pre id="selftest">` with the milliseconds the script took to draw the page and to redraw
//!   the bars for a new λ; the browser test (`.ci/run`, `crates/topos-cli/tests/report.rs`) reads it.

use crate::plot::escape;
use crate::vis::Vis;
use serde_json::{json, Value};
use std::fmt::Write as _;
use topos_model::TopicModel;

/// A document shown under a topic.
#[derive(Clone, Debug)]
pub struct ExampleDoc {
    /// Its number among the training documents.
    pub doc: usize,
    /// Where it came from, as the corpus recorded it (the line or record of the input).
    pub source_index: Option<u64>,
    /// θ_dk.
    pub share: f64,
    /// What to show: its source line, or its words.
    pub text: String,
}

/// Everything the report shows besides the model.
#[derive(Clone, Debug, Default)]
pub struct ReportExtras {
    /// The page's title (normally the model file's name).
    pub title: String,
    /// Lines under the title (what the model is: sizes, sampler, hyperparameters).
    pub facts: Vec<String>,
    /// Per topic (original numbering), its example documents.
    pub docs: Option<Vec<Vec<ExampleDoc>>>,
    /// Where the example documents come from, in words.
    pub docs_note: String,
    /// The convergence figure ([`crate::plot::convergence_svg`]).
    pub convergence_svg: Option<String>,
    /// The initial λ of the slider (LDAvis suggests 0.6).
    pub lambda: f64,
}

/// Rounds to 6 significant digits, so the data is short.
fn r6(x: f64) -> Value {
    if !x.is_finite() {
        return Value::Null;
    }
    if x == 0.0 {
        return json!(0.0);
    }
    let mag = x.abs().log10().floor() as i32;
    let scale = 10f64.powi(5 - mag);
    let y = (x * scale).round() / scale;
    json!(y)
}

/// JSON that can sit inside a `<script>` element: `<`, `>`, `&`, U+2028 and U+2029 escaped.
pub fn script_json(v: &Value) -> String {
    let s = v.to_string();
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// The data block of the page.
pub fn report_data(model: &TopicModel, vis: &Vis, extras: &ReportExtras) -> Value {
    // The words used anywhere, numbered locally.
    let mut local: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    let mut words: Vec<u32> = Vec::new();
    let mut id = |w: u32, words: &mut Vec<u32>| {
        *local.entry(w).or_insert_with(|| {
            words.push(w);
            words.len() - 1
        })
    };
    let salient: Vec<usize> = vis.salient.iter().map(|&w| id(w, &mut words)).collect();
    let topics: Vec<Value> = vis
        .order
        .iter()
        .map(|&t| {
            let terms: Vec<Value> = vis.relevant[t]
                .iter()
                .map(|s| {
                    json!([id(s.word, &mut words), r6(s.logprob), r6(s.loglift), r6(s.freq)])
                })
                .collect();
            let docs: Vec<Value> = extras
                .docs
                .as_ref()
                .map(|d| {
                    d[t].iter()
                        .map(|e| json!({"doc": e.doc, "source": e.source_index, "share": r6(e.share), "text": e.text}))
                        .collect()
                })
                .unwrap_or_default();
            json!({
                "id": t,
                "x": r6(vis.coords[t][0]),
                "y": r6(vis.coords[t][1]),
                "p": r6(vis.proportion[t]),
                "terms": terms,
                "docs": docs,
            })
        })
        .collect();
    json!({
        "k": vis.num_topics,
        "r": vis.terms,
        "lambda": extras.lambda,
        "lambdaStep": vis.lambda_step,
        "words": words.iter().map(|&w| model.vocab.word(w)).collect::<Vec<_>>(),
        "total": words.iter().map(|&w| r6(vis.term_frequency[w as usize])).collect::<Vec<_>>(),
        "salient": salient,
        "topics": topics,
        "hasDocs": extras.docs.is_some(),
        "docsNote": extras.docs_note,
    })
}

/// The whole page.
pub fn render(model: &TopicModel, vis: &Vis, extras: &ReportExtras) -> String {
    let data = script_json(&report_data(model, vis, extras));
    let mut facts = String::new();
    for f in &extras.facts {
        let _ = write!(facts, "<li>{}</li>", escape(f));
    }
    let convergence = match &extras.convergence_svg {
        Some(svg) => {
            format!("<section><h2>Convergence</h2><div class=\"figure\">{svg}</div></section>")
        }
        None => String::new(),
    };
    let mut page = String::with_capacity(data.len() + 16_384);
    page.push_str(HEAD);
    let _ = write!(
        page,
        "<title>{title}</title></head><body><header><h1>{title}</h1><ul class=\"facts\">{facts}</ul></header>",
        title = escape(&extras.title)
    );
    page.push_str(BODY);
    page.push_str(&convergence);
    page.push_str("<script type=\"application/json\" id=\"data\">");
    page.push_str(&data);
    page.push_str("</script><script>");
    page.push_str(SCRIPT);
    page.push_str("</script></body></html>\n");
    page
}

const HEAD: &str = r##"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 1.5em 2em;color:#222}
h1{font-size:1.4em;margin:.6em 0 .2em}h2{font-size:1.1em;margin:1.2em 0 .4em}
.facts{margin:0;padding:0;list-style:none;color:#555;font-size:.9em}.facts li{display:inline;margin-right:1.2em}
.controls{margin:.6em 0;display:flex;gap:1em;align-items:center;flex-wrap:wrap;font-size:.95em}
.main{display:flex;gap:1.5em;flex-wrap:wrap}
#map{border:1px solid #ccc;background:#fafafa;cursor:pointer}
#map circle{fill:#8fb8de;fill-opacity:.55;stroke:#4a7fb0;stroke-width:.6}
#map circle.sel{fill:#d55e00;fill-opacity:.75;stroke:#8a3c00}
#map text{font-size:10px;fill:#333;pointer-events:none}
#bars{min-width:380px;flex:1}
.bar{display:flex;align-items:center;height:18px;font-size:12px}
.bar .w{width:140px;text-align:right;padding-right:6px;overflow:hidden;white-space:nowrap;text-overflow:ellipsis}
.bar .t{position:relative;flex:1;height:13px}
.bar .t span{position:absolute;left:0;top:0;height:13px}
.bar .all{background:#c8d8e8}.bar .in{background:#d55e00}
.legend{font-size:.8em;color:#555}
.docs li{margin:.3em 0;font-size:.9em}.docs .meta{color:#777;font-size:.85em}
.figure svg{max-width:100%;height:auto}
#selftest{display:none}
</style>
"##;

const BODY: &str = r##"<div class="controls">
<label>topic <input id="topic" type="number" min="0" style="width:6em"></label>
<button id="prev">&#8592;</button><button id="next">&#8594;</button><button id="clear">all topics</button>
<label>relevance &#955; = <span id="lambdaValue"></span> <input id="lambda" type="range" min="0" max="1" step="0.01" style="width:14em"></label>
</div>
<div class="main">
<div style="width:520px"><svg id="map" width="520" height="520" viewBox="0 0 520 520" role="img" aria-label="intertopic distance map"></svg>
<div class="legend">Intertopic distance map: Jensen&#8211;Shannon divergence between topics, classical MDS; circle area = share of tokens. Click a circle.</div></div>
<div id="bars"><h2 id="barsTitle"></h2><div id="barRows"></div>
<div class="legend"><span style="background:#c8d8e8">&#160;&#160;&#160;</span> estimated tokens of the word in the corpus &#160; <span style="background:#d55e00">&#160;&#160;&#160;</span> in the selected topic. Relevance = &#955; log p(w|k) + (1&#8722;&#955;) log(p(w|k)/p(w)) (Sievert &amp; Shirley 2014); with no topic selected, the most salient words.</div></div>
</div>
<section><h2 id="docsTitle">Documents</h2><ol class="docs" id="docs"></ol><p class="legend" id="docsNote"></p></section>
<pre id="selftest"></pre>
"##;

const SCRIPT: &str = r##"(function(){
"use strict";
var t0=performance.now();
var D=JSON.parse(document.getElementById("data").textContent);
var errors=[];window.addEventListener("error",function(e){errors.push(String(e.message));});
document.addEventListener("securitypolicyviolation",function(e){errors.push("blocked "+e.blockedURI);});
var NS="http://www.w3.org/2000/svg",W=520;
var map=document.getElementById("map"),slider=document.getElementById("lambda"),lv=document.getElementById("lambdaValue");
var input=document.getElementById("topic"),rows=document.getElementById("barRows"),title=document.getElementById("barsTitle");
var sel=-1,lambda=D.lambda;slider.value=lambda;input.max=D.k-1;
function el(tag,attrs,text){var e=document.createElement(tag);for(var a in attrs)e.setAttribute(a,attrs[a]);if(text!==undefined)e.textContent=text;return e;}
var xs=D.topics.map(function(t){return t.x;}),ys=D.topics.map(function(t){return t.y;});
var x0=Math.min.apply(null,xs),x1=Math.max.apply(null,xs),y0=Math.min.apply(null,ys),y1=Math.max.apply(null,ys);
var span=Math.max(x1-x0,y1-y0)||1,pmax=Math.max.apply(null,D.topics.map(function(t){return t.p;}))||1;
var rmax=Math.max(6,Math.min(60,260/Math.sqrt(D.k))),PAD=rmax+4;
var circles=[];
D.topics.forEach(function(t,i){
 var cx=PAD+(t.x-x0)/span*(W-2*PAD),cy=W-PAD-(t.y-y0)/span*(W-2*PAD),r=Math.max(1.5,rmax*Math.sqrt(t.p/pmax));
 var c=document.createElementNS(NS,"circle");c.setAttribute("cx",cx.toFixed(1));c.setAttribute("cy",cy.toFixed(1));c.setAttribute("r",r.toFixed(1));
 var tip=document.createElementNS(NS,"title");tip.textContent="topic "+t.id+" ("+(100*t.p).toFixed(2)+"%)";c.appendChild(tip);
 c.addEventListener("click",function(ev){ev.stopPropagation();select(i);});
 map.appendChild(c);circles.push(c);
 if(i<50){var l=document.createElementNS(NS,"text");l.setAttribute("x",cx.toFixed(1));l.setAttribute("y",(cy+3).toFixed(1));l.setAttribute("text-anchor","middle");l.textContent=String(t.id);map.appendChild(l);}
});
function bar(word,all,inTopic,max){
 var row=el("div",{"class":"bar"}),w=el("div",{"class":"w",title:word},word),t=el("div",{"class":"t"});
 var a=el("span",{"class":"all"});a.style.width=(100*all/max).toFixed(2)+"%";t.appendChild(a);
 if(inTopic!==null){var b=el("span",{"class":"in"});b.style.width=(100*inTopic/max).toFixed(2)+"%";t.appendChild(b);}
 row.appendChild(w);row.appendChild(t);return row;
}
function render(){
 lv.textContent=Number(lambda).toFixed(2);rows.textContent="";
 circles.forEach(function(c,i){c.setAttribute("class",i===sel?"sel":"");});
 if(sel<0){
  title.textContent="Most salient words (all topics)";
  var max=Math.max.apply(null,D.salient.map(function(w){return D.total[w];}))||1;
  D.salient.forEach(function(w){rows.appendChild(bar(D.words[w],D.total[w],null,max));});
 } else {
  var t=D.topics[sel];input.value=t.id;
  title.textContent="Topic "+t.id+" ("+(100*t.p).toFixed(2)+"% of tokens): top "+D.r+" words by relevance";
  var ranked=t.terms.map(function(s){return [lambda*s[1]+(1-lambda)*s[2],s];});
  ranked.sort(function(a,b){return b[0]-a[0]||a[1][0]-b[1][0];});
  ranked=ranked.slice(0,D.r);
  var max=Math.max.apply(null,ranked.map(function(x){return D.total[x[1][0]];}))||1;
  ranked.forEach(function(x){var s=x[1];rows.appendChild(bar(D.words[s[0]],D.total[s[0]],s[3],max));});
 }
 renderDocs();
}
function renderDocs(){
 var list=document.getElementById("docs"),head=document.getElementById("docsTitle");list.textContent="";
 document.getElementById("docsNote").textContent=D.docsNote;
 if(!D.hasDocs){head.textContent="Documents";return;}
 if(sel<0){head.textContent="Documents: select a topic";return;}
 var t=D.topics[sel];head.textContent="Documents most about topic "+t.id;
 t.docs.forEach(function(d){var li=el("li");li.appendChild(el("span",{"class":"meta"},(100*d.share).toFixed(1)+"% · "+(d.source!==null?"input record "+d.source:"training document "+d.doc)+": "));li.appendChild(document.createTextNode(d.text));list.appendChild(li);});
}
function select(i){sel=i;render();}
function byId(id){for(var i=0;i<D.topics.length;i++)if(D.topics[i].id===id)return i;return -1;}
slider.addEventListener("input",function(){lambda=Number(slider.value);render();});
input.addEventListener("change",function(){var i=byId(Number(input.value));if(i>=0)select(i);});
document.getElementById("prev").addEventListener("click",function(){select(sel<=0?D.topics.length-1:sel-1);});
document.getElementById("next").addEventListener("click",function(){select((sel+1)%D.topics.length);});
document.getElementById("clear").addEventListener("click",function(){select(-1);});
map.addEventListener("click",function(){select(-1);});
render();
var loadMs=performance.now()-t0;
if(location.hash==="#selftest"){
 var out={circles:map.querySelectorAll("circle").length,k:D.k,loadMs:loadMs};
 function bars(){return Array.prototype.map.call(rows.querySelectorAll(".w"),function(w){return w.textContent;}).join(" ");}
 out.overview=bars();
 if(circles.length>0){circles[0].dispatchEvent(new MouseEvent("click",{bubbles:true}));}
 out.selected=sel;out.title=title.textContent;
 var t1=performance.now();
 slider.value="1";slider.dispatchEvent(new Event("input"));out.lambda1=bars();
 slider.value="0";slider.dispatchEvent(new Event("input"));out.lambda0=bars();
 out.sliderMs=(performance.now()-t1)/2;
 out.docs=document.getElementById("docs").children.length;
 out.requests=performance.getEntriesByType("resource").length;
 out.errors=errors;
 document.getElementById("selftest").textContent=JSON.stringify(out);
}
})();
"##;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_json_cannot_end_its_block() {
        let v = json!({"w": "</script><script>alert(1)</script> & \u{2028}"});
        let s = script_json(&v);
        assert!(!s.contains('<') && !s.contains('>') && !s.contains('&'));
        let back: Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn rounding_keeps_six_digits() {
        assert_eq!(r6(-7.123456789), json!(-7.12346));
        assert_eq!(r6(0.000123456789), json!(0.000123457));
        assert_eq!(r6(f64::NEG_INFINITY), Value::Null);
    }
}
