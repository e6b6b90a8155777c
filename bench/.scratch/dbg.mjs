import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
process.env.CI='0';
const { render, Text, useInput } = await import('ink');
const React = (await import('react')).default;
class Out extends EventEmitter { columns=120; rows=40; isTTY=true; write=(d)=>{ log.push(['write', performance.now()-t0, JSON.stringify(d).slice(0,30)]); return true; } }
class In extends EventEmitter { isTTY=true; data=null; write=(d)=>{this.data=d;this.emit('readable');}; read=()=>{const d=this.data;this.data=null;return d}; setEncoding(){} setRawMode(){} resume(){} pause(){} ref(){} unref(){} }
let log=[]; let t0=performance.now();
function C(){ const [n,setN]=React.useState(0); useInput((i)=>{ log.push(['handler', performance.now()-t0]); setN(x=>x+1)}); log.push(['render', performance.now()-t0]); return React.createElement(Text,null,`n=${n}`); }
const out=new Out(), inp=new In();
render(React.createElement(C), {stdout: out, stdin: inp, maxFps: 1000, patchConsole:false, exitOnCtrlC:false, onRender: ()=>log.push(['onRender', performance.now()-t0])});
await new Promise(r=>setTimeout(r,50));
for (let i=0;i<3;i++){ log=[]; t0=performance.now(); inp.write('j'); log.push(['returned', performance.now()-t0]); await new Promise(r=>setTimeout(r,50)); console.log(log); }
process.exit(0)
