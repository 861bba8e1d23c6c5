//! Being told that runs wait: the header's link to the runs inbox with how many wait for the
//! reader, the count in the page's title, and browser notifications for those who asked for them.
//! The server renders the count with the page; the page's script ([`COUNT_SCRIPT`]) keeps it up to
//! date from the reader's event stream (`/events/user`), and tells the page's islands (the inbox)
//! that the runs changed by a window event, [`WAITING_EVENT`], so a page holds one stream.
//!
//! Plain JS, not islands: a link's count, a title and a button are a few DOM writes, and as two
//! islands they cost the WASM about 3 KiB (brotli) of their own (issue 40). The words the script
//! needs come with the markup, in the reader's language.

use leptos::prelude::*;

use crate::i18n::{Lang, Text};
use crate::model::WaitingView;

/// Dispatched on `window` when the runs that wait for the reader changed.
pub const WAITING_EVENT: &str = "tourguide-waiting";

/// "2 runs wait for you", for the count's accessible label.
pub fn waiting_label(count: u32, lang: Lang) -> String {
    if count == 1 {
        lang.t(Text::WaitingOne).to_string()
    } else {
        lang.t(Text::WaitingMany).replace("{}", &count.to_string())
    }
}

/// The page's title with the count in front while anything waits: "(2) Tourguide".
pub fn waiting_title(count: u32, lang: Lang) -> String {
    match count {
        0 => lang.t(Text::AppName).to_string(),
        count => format!("({count}) {}", lang.t(Text::AppName)),
    }
}

/// The header's link to the runs inbox, with the count while anything waits; `COUNT_SCRIPT` keeps
/// it live.
#[component]
pub fn WaitingLink(waiting: WaitingView) -> impl IntoView {
    let lang = crate::use_lang();
    let count = waiting.count;
    view! {
        <a
            href="/runs"
            class="waiting-link"
            data-mark=waiting.mark
            data-one=lang.t(Text::WaitingOne)
            data-many=lang.t(Text::WaitingMany)
            data-app=lang.t(Text::AppName)
            data-approval=lang.t(Text::NotifyApproval)
            data-answer=lang.t(Text::NotifyAnswer)
        >
            {lang.t(Text::NavInbox)}
            <span class="waiting-count">
                {(count > 0)
                    .then(|| {
                        view! {
                            " "
                            <span class="count-badge" aria-hidden="true">{count}</span>
                            <span class="visually-hidden">{format!("({})", waiting_label(count, lang))}</span>
                        }
                    })}
            </span>
        </a>
    }
}

/// Notifications in this browser, on or off: asks the browser's permission only when clicked, and
/// remembers the choice in this browser. Shown by `NOTIFY_SCRIPT`; without JS there is nothing it
/// could do, so it stays hidden.
#[component]
pub fn NotifyToggle() -> impl IntoView {
    let lang = crate::use_lang();
    view! {
        <section
            class="notify"
            hidden
            data-on=lang.t(Text::NotifyOn)
            data-off=lang.t(Text::NotifyOff)
            data-refused=lang.t(Text::NotifyRefused)
        >
            <h2>{lang.t(Text::NotifyHeading)}</h2>
            <p class="lead">{lang.t(Text::NotifyLead)}</p>
            <button type="button" class="secondary notify-toggle" aria-pressed="false">
                {lang.t(Text::NotifyOn)}
            </button>
            <p class="error" role="alert"></p>
        </section>
    }
}

/// The header's count, live: each "waiting" from `/events/user` sets the badge, its label and the
/// title, tells the page's islands when the set of runs changed (so it runs once they are
/// hydrated: an open inbox hears the first message too), and notifies when the count went up, if
/// the reader turned notifications on in this browser. A click on the notification opens the run's
/// conversation; its tag is the run, so the tabs of one browser show it once.
pub const COUNT_SCRIPT: &str = "{const link=document.querySelector('.waiting-link[data-many]');\
if(link&&window.EventSource){const badge=link.querySelector('.count-badge');\
let mark=link.dataset.mark,count=badge?Number(badge.textContent):0;\
const shown=link.querySelector('.waiting-count'),data=link.dataset;\
new EventSource('/events/user').addEventListener('waiting',event=>{let now;try{now=JSON.parse(event.data)}catch(error){return}\
const before=count;count=now.count;shown.replaceChildren();\
if(count>0){const badge=document.createElement('span'),label=document.createElement('span');\
badge.className='count-badge';badge.setAttribute('aria-hidden','true');badge.textContent=count;\
label.className='visually-hidden';label.textContent='('+(count===1?data.one:data.many.replace('{}',count))+')';\
shown.append(' ',badge,label)}\
document.title=count>0?'('+count+') '+data.app:data.app;\
if(now.mark!==mark){mark=now.mark;window.dispatchEvent(new Event('tourguide-waiting'))}\
let on=false;try{on=localStorage.getItem('tourguide.notify')==='on'}catch(error){}\
const latest=now.latest;\
if(count>before&&latest&&on&&window.Notification&&Notification.permission==='granted'){\
const told=new Notification((latest.approval?data.approval:data.answer)+' — '+latest.title,{tag:latest.run_id});\
told.onclick=()=>{window.focus();location.href='/c/'+latest.conversation_id}}})}}";

/// The toggle on /account: shown where the browser has notifications; remembers "on" in this
/// browser (`tourguide.notify`), asking the browser's permission first.
pub const NOTIFY_SCRIPT: &str = "{const notify=document.querySelector('.notify[data-on]');\
if(notify&&window.Notification){notify.hidden=false;\
const button=notify.querySelector('button'),refused=notify.querySelector('.error');let on=false;\
const show=value=>{on=value;button.setAttribute('aria-pressed',String(value));\
button.textContent=value?notify.dataset.off:notify.dataset.on};\
try{show(localStorage.getItem('tourguide.notify')==='on')}catch(error){}\
const remember=value=>{try{if(value)localStorage.setItem('tourguide.notify','on');\
else localStorage.removeItem('tourguide.notify')}catch(error){}show(value)};\
const answered=permission=>{remember(permission==='granted');\
refused.textContent=permission==='granted'?'':notify.dataset.refused};\
button.addEventListener('click',()=>{refused.textContent='';if(on)return remember(false);\
if(Notification.permission!=='default')return answered(Notification.permission);\
Promise.resolve(Notification.requestPermission()).then(answered,()=>answered('denied'))})}}";
